#include "server/http_server.h"

#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "server/access_log.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kKeepAliveSeconds = 2;
// Pending connections the listening socket queues before accept.
constexpr int kListenBacklog = 1024;
constexpr int kSpareHttpThreads = 8;
constexpr int kMaxHttpThreads = 1024;

// Constant-time comparison, so the key cannot be guessed byte by byte.
bool same_secret(const std::string& given, const std::string& key) {
  if (key.empty()) return false;
  unsigned diff = given.size() != key.size() ? 1u : 0u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  }
  return diff == 0;
}

bool authorized(const httplib::Request& req, const std::string& key) {
  static const std::string kBearer = "Bearer ";
  const std::string h = req.get_header_value("Authorization");
  if (h.compare(0, kBearer.size(), kBearer) == 0 && same_secret(h.substr(kBearer.size()), key)) return true;
  const std::string x = req.get_header_value("X-Api-Key");
  return !x.empty() && same_secret(x, key);
}

thread_local Clock::time_point t_request_start;

}  // namespace

std::string read_api_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open the API key file");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string key = ss.str();
  const char* ws = " \t\r\n";
  const size_t b = key.find_first_not_of(ws);
  if (b == std::string::npos) throw InvalidArgument(path + ": the API key file is empty");
  return key.substr(b, key.find_last_not_of(ws) - b + 1);
}

HttpServer::HttpServer(Engine& engine, ServerOptions options)
    : state_(std::make_unique<ServerState>(engine, std::move(options))), http_(std::make_unique<httplib::Server>()) {
  ServerState& st = *state_;
  int threads = st.opt.http_threads;
  if (threads <= 0) threads = std::min(kMaxHttpThreads, 2 * engine.n_parallel() + kSpareHttpThreads + 64);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(st.opt.max_body_bytes);
  http_->set_read_timeout(st.opt.read_timeout_s, 0);
  http_->set_keep_alive_timeout(kKeepAliveSeconds);
  // httplib's own options, and the socket kept so that bind() can widen the
  // accept queue.
  http_->set_socket_options([&st](socket_t sock) {
    httplib::default_socket_options(sock);
    st.listen_fd = static_cast<int>(sock);
  });

  http_->set_pre_routing_handler([&st](const httplib::Request& req, httplib::Response& res) {
    t_request_start = Clock::now();
    RequestRecord& rec = current_record();
    rec = {};
    rec.id = new_id("req-");
    res.set_header("X-Request-Id", rec.id);
    if (st.opt.api_key.empty() || req.path == "/health" || req.method == "OPTIONS") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (authorized(req, st.opt.api_key)) return httplib::Server::HandlerResponse::Unhandled;
    ++st.counters.unauthorized;
    res.set_header("WWW-Authenticate", "Bearer");
    set_error(st, res, kStatusUnauthorized, "invalid_request_error",
              "Missing or incorrect API key: send 'Authorization: Bearer <key>'", "", "invalid_api_key");
    return httplib::Server::HandlerResponse::Handled;
  });

  http_->set_error_handler([&st](const httplib::Request& req, httplib::Response& res) {
    // Statuses httplib sets itself (404 no route, 413 body too large, 400 bad request line).
    if (!res.body.empty()) return;
    const std::string msg = res.status == kStatusNotFound ? "no route for " + req.method + " " + req.path
                                                          : "request refused with status " + std::to_string(res.status);
    set_json(res, error_body(res.status, "invalid_request_error", msg), res.status);
  });

  http_->set_logger([&st](const httplib::Request& req, const httplib::Response& res) {
    ++st.counters.requests;
    if (res.status >= kStatusBadRequest) ++st.counters.errors;
    if (st.opt.log_format == LogFormat::Off) return;
    const RequestRecord& rec = current_record();
    AccessEntry e;
    e.id = rec.id;
    e.method = req.method;
    e.path = req.path;
    e.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
    e.status = res.status;
    e.prompt_tokens = rec.prompt_tokens;
    e.completion_tokens = rec.completion_tokens;
    e.streamed = rec.streamed;
    e.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - t_request_start).count();
    const std::string line = format_access(e, st.opt.log_format);
    if (st.opt.log_sink) {
      st.opt.log_sink(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  });

  add_chat_routes(*http_, st);
  add_completion_routes(*http_, st);
  add_native_routes(*http_, st);
  add_info_routes(*http_, st);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() {
  const ServerOptions& o = state_->opt;
  int port = o.port;
  if (port == 0) {
    port = http_->bind_to_any_port(o.host);
    if (port < 0) throw IoError(o.host, "cannot bind a port");
  } else if (!http_->bind_to_port(o.host, port)) {
    throw IoError(o.host + ":" + std::to_string(port), "cannot bind (in use or not permitted)");
  }
  // The httplib build Debian ships listens with a backlog of 5: a burst of
  // clients (32 streams opening at once) overflowed the accept queue and some
  // connections were lost before a request was read. listen() again on the
  // bound socket sets a deeper queue (the kernel caps it at somaxconn).
  if (state_->listen_fd >= 0 && ::listen(state_->listen_fd, kListenBacklog) != 0) {
    throw IoError(o.host + ":" + std::to_string(port), std::string("cannot listen: ") + std::strerror(errno));
  }
  return port;
}

bool HttpServer::serve() { return http_->listen_after_bind(); }

void HttpServer::stop() {
  state_->engine.shutdown();
  http_->stop();
}

}  // namespace ferrite::server
