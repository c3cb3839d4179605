#include "server/metrics.h"

#include <sstream>

namespace ferrite::server {
namespace {

void metric(std::ostringstream& out, const char* name, const char* type, const char* help, double value,
            const char* prefix = "ferrite") {
  out << "# HELP " << prefix << ':' << name << ' ' << help << '\n'
      << "# TYPE " << prefix << ':' << name << ' ' << type << '\n'
      << prefix << ':' << name << ' ' << value << '\n';
}

double per_second(double count, double ms) { return ms > 0 ? count / (ms / 1000.0) : 0.0; }

// llama-server's names, for dashboards built on them.
void llamacpp_aliases(std::ostringstream& out, const EngineStats& s, int64_t n_ctx) {
  const char* p = "llamacpp";
  metric(out, "prompt_tokens_total", "counter", "Number of prompt tokens processed.",
         static_cast<double>(s.prompt_tokens), p);
  metric(out, "prompt_seconds_total", "counter", "Prompt process time.", s.prompt_ms / 1000.0, p);
  metric(out, "tokens_predicted_total", "counter", "Number of generation tokens processed.",
         static_cast<double>(s.generated_tokens), p);
  metric(out, "tokens_predicted_seconds_total", "counter", "Predict process time.", s.generation_ms / 1000.0, p);
  metric(out, "n_decode_total", "counter", "Total number of llama_decode() calls.", static_cast<double>(s.steps), p);
  metric(out, "n_busy_slots_per_decode", "counter", "Average number of busy slots per llama_decode() call.",
         s.steps > 0 ? static_cast<double>(s.busy_slot_steps) / static_cast<double>(s.steps) : 0.0, p);
  metric(out, "prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
         per_second(static_cast<double>(s.prompt_tokens), s.prompt_ms), p);
  metric(out, "predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
         per_second(static_cast<double>(s.generated_tokens), s.generation_ms), p);
  metric(out, "kv_cache_usage_ratio", "gauge", "KV-cache usage. 1 means 100 percent usage.",
         n_ctx > 0 ? static_cast<double>(s.cached_cells) / static_cast<double>(n_ctx) : 0.0, p);
  metric(out, "kv_cache_tokens", "gauge", "KV-cache tokens.", static_cast<double>(s.cached_cells), p);
  metric(out, "requests_processing", "gauge", "Number of requests processing.", s.active, p);
  metric(out, "requests_deferred", "gauge", "Number of requests deferred.", static_cast<double>(s.queued), p);
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
  metric(out, "prompt_tokens_prefix_copied_total", "counter",
         "Prompt tokens copied from another slot's cache (of the cached ones).",
         static_cast<double>(s.prefix_copied_tokens));
  metric(out, "tokens_predicted_total", "counter", "Tokens generated.", static_cast<double>(s.generated_tokens));
  metric(out, "decode_steps_total", "counter", "Batches evaluated.", static_cast<double>(s.steps));
  metric(out, "draft_tokens_total", "counter", "Speculative draft tokens verified.",
         static_cast<double>(s.drafted_tokens));
  metric(out, "draft_tokens_accepted_total", "counter", "Speculative draft tokens accepted.",
         static_cast<double>(s.draft_accepted_tokens));
  metric(out, "draft_acceptance_ratio", "gauge", "Accepted over verified draft tokens (0 without drafts).",
         s.drafted_tokens > 0 ? static_cast<double>(s.draft_accepted_tokens) / static_cast<double>(s.drafted_tokens)
                              : 0.0);
  metric(out, "requests_processing", "gauge", "Slots busy.", s.active);
  metric(out, "requests_deferred", "gauge", "Requests waiting for a slot.", static_cast<double>(s.queued));
  metric(out, "http_requests_total", "counter", "HTTP requests answered.", static_cast<double>(st.counters.requests.load()));
  metric(out, "http_errors_total", "counter", "HTTP responses with status >= 400.", static_cast<double>(st.counters.errors.load()));
  metric(out, "http_unauthorized_total", "counter", "Requests refused for a missing or wrong API key.",
         static_cast<double>(st.counters.unauthorized.load()));
  metric(out, "client_disconnects_total", "counter", "Clients that hung up before their answer was complete.",
         static_cast<double>(st.counters.disconnects()));
  metric(out, "http_forbidden_total", "counter", "Requests refused for their Host or Origin.",
         static_cast<double>(st.counters.forbidden.load()));
  metric(out, "http_rate_limited_total", "counter", "Requests refused by the rate limit (429).",
         static_cast<double>(st.counters.rate_limited.load()));
  if (st.front_stats) {
    const http::FrontStats f = st.front_stats();
    metric(out, "http_connections_open", "gauge", "Client connections open.", static_cast<double>(f.open));
    metric(out, "http_connections_evicted_total", "counter",
           "Connections closed to make room (the oldest still sending a request).", static_cast<double>(f.evicted));
    metric(out, "http_timeouts_total", "counter", "Connections dropped by a read or write deadline.",
           static_cast<double>(f.timed_out));
    metric(out, "http_refused_total", "counter", "Requests refused by the HTTP front (malformed, over a limit, busy).",
           static_cast<double>(f.refused));
  }
  llamacpp_aliases(out, s, st.engine.n_ctx());
  return out.str();
}

}  // namespace ferrite::server
