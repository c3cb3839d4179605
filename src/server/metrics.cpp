#include "server/metrics.h"

#include <sstream>

namespace ferrite::server {
namespace {

void metric(std::ostringstream& out, const char* name, const char* type, const char* help, double value) {
  out << "# HELP ferrite:" << name << ' ' << help << '\n'
      << "# TYPE ferrite:" << name << ' ' << type << '\n'
      << "ferrite:" << name << ' ' << value << '\n';
}

}  // namespace

std::string render_metrics(const ServerState& st) {
  const EngineStats s = st.engine.stats();
  std::ostringstream out;
  metric(out, "requests_total", "counter", "Generation requests finished by the engine.", static_cast<double>(s.requests));
  metric(out, "requests_cancelled_total", "counter", "Requests ended by cancellation (client gone, shutdown).",
         static_cast<double>(s.cancelled));
  metric(out, "requests_rejected_total", "counter", "Requests refused because the queue was full.",
         static_cast<double>(s.rejected));
  metric(out, "prompt_tokens_total", "counter", "Prompt tokens evaluated.", static_cast<double>(s.prompt_tokens));
  metric(out, "prompt_tokens_cached_total", "counter", "Prompt tokens reused from a slot's cache.",
         static_cast<double>(s.cached_tokens));
  metric(out, "tokens_predicted_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens));
  metric(out, "decode_steps_total", "counter", "Batches evaluated.", static_cast<double>(s.steps));
  metric(out, "requests_processing", "gauge", "Slots busy.", s.active);
  metric(out, "requests_deferred", "gauge", "Requests waiting for a slot.", static_cast<double>(s.queued));
  metric(out, "http_requests_total", "counter", "HTTP requests answered.", static_cast<double>(st.counters.requests.load()));
  metric(out, "http_errors_total", "counter", "HTTP responses with status >= 400.", static_cast<double>(st.counters.errors.load()));
  metric(out, "http_unauthorized_total", "counter", "Requests refused for a missing or wrong API key.",
         static_cast<double>(st.counters.unauthorized.load()));
  metric(out, "client_disconnects_total", "counter", "Clients that hung up before their answer was complete.",
         static_cast<double>(st.counters.disconnects()));
  return out.str();
}

}  // namespace ferrite::server
