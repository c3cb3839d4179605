#include "server/http_server.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "server/access_log.h"
#include "server/api_error.h"
#include "server/generation.h"
#include "server/rate_limit.h"
#include "server/request_policy.h"
#include "server/routes.h"

namespace ferrite::server {
namespace {

constexpr int kStatusForbidden = 403;
constexpr int kStatusMethodNotAllowed = 405;
constexpr int kStatusUnsupportedMedia = 415;
constexpr int kStatusTooManyRequests = 429;
constexpr int kStatusNoContent = 204;
constexpr int kSpareHttpThreads = 8;
constexpr int kMaxHttpThreads = 1024;
// A burst of requests a key may send at once, in seconds of its rate.
constexpr double kRateBurstSeconds = 10.0;

// Constant-time comparison, so the key cannot be guessed byte by byte.
bool same_secret(const std::string& given, const std::string& key) {
  if (key.empty()) return false;
  unsigned diff = given.size() != key.size() ? 1u : 0u;
  for (size_t i = 0; i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i]) ^ static_cast<unsigned char>(key[i % key.size()]);
  }
  return diff == 0;
}

// The key the request presents ("" when none).
std::string presented_key(const http::Request& req) {
  static const std::string kBearer = "Bearer ";
  const std::string h = req.header("Authorization");
  if (h.compare(0, kBearer.size(), kBearer) == 0) return h.substr(kBearer.size());
  return req.header("X-Api-Key");
}

// The configured key that matches (every key is compared: no early exit).
const std::string* matching_key(const std::string& given, const std::vector<std::string>& keys) {
  const std::string* found = nullptr;
  for (const std::string& k : keys) {
    if (same_secret(given, k)) found = &k;
  }
  return found;
}

http::FrontOptions front_options(const ServerOptions& o, const Engine& engine) {
  http::FrontOptions f = o.front;
  f.reader.max_body_bytes = o.max_body_bytes;
  f.body_timeout_s = o.read_timeout_s;
  int threads = o.http_threads;
  if (threads <= 0) {
    // Every generation request holds a worker while the engine serves or
    // queues it; the rest are for requests that never reach the engine.
    threads = std::min<int>(kMaxHttpThreads, engine.n_parallel() + static_cast<int>(engine.max_queue()) + kSpareHttpThreads);
  }
  f.worker_threads = threads;
  return f;
}

}  // namespace

class HttpApp : public http::Application {
 public:
  HttpApp(Engine& engine, ServerOptions options)
      : st_(engine, std::move(options)),
        policy_{OriginPolicy::is_loopback_listen(st_.opt.host), st_.opt.cors_origins},
        rate_(st_.opt.rate_limit_per_minute, st_.opt.rate_limit_per_minute / 60.0 * kRateBurstSeconds),
        front_(front_options(st_.opt, engine), *this) {
    st_.front_stats = [this] { return front_.stats(); };
    add_chat_routes(routes_, st_);
    add_completion_routes(routes_, st_);
    add_native_routes(routes_, st_);
    add_info_routes(routes_, st_);
    add_embedding_routes(routes_, st_);
    add_rerank_routes(routes_, st_);
    add_slot_routes(routes_, st_);
    add_webui_routes(routes_, st_);
    add_lora_routes(routes_, st_);
  }

  ServerState& state() { return st_; }
  http::Front& front() { return front_; }
  const http::Front& front() const { return front_; }

  bool admit(const http::Request& head, http::Response& res) override {
    res.set_header("X-Request-Id", new_id("req-"));
    // A page of another site, or a name resolving to us that is not ours.
    if (const std::string why = check_host(head, policy_); !why.empty()) {
      ++st_.counters.forbidden;
      return refuse(res, kStatusForbidden, "permission_error", why, "host_not_allowed");
    }
    const OriginVerdict origin = check_origin(head, policy_);
    if (origin == OriginVerdict::Refused) {
      ++st_.counters.forbidden;
      return refuse(res, kStatusForbidden, "permission_error",
                    "requests from the web origin '" + head.header("Origin") +
                        "' are not allowed (start the server with --cors ORIGIN to allow a site)",
                    "origin_not_allowed");
    }
    if (origin == OriginVerdict::Allowed) add_cors_headers(res, head.header("Origin"), head.method == "OPTIONS");
    bool path_known = false;
    const Route* route = routes_.find(head.method, head.path, &path_known);
    if (head.method == "OPTIONS" && path_known) {
      if (origin != OriginVerdict::Allowed && origin != OriginVerdict::Same) {
        return refuse(res, kStatusForbidden, "permission_error", "cross-origin requests are not allowed here",
                      "origin_not_allowed");
      }
      res.status = kStatusNoContent;
      return false;  // a preflight is answered here, without a body
    }
    if (!route) {
      if (path_known) {
        res.set_header("Allow", allowed_methods(head.path));
        return refuse(res, kStatusMethodNotAllowed, "invalid_request_error",
                      head.method + " is not allowed on " + head.path, "");
      }
      return refuse(res, kStatusNotFound, "invalid_request_error", "no route for " + head.method + " " + head.path, "");
    }
    std::string key;
    if (!st_.opt.api_keys.empty() && head.path != "/health" && !route->is_public) {
      const std::string* k = matching_key(presented_key(head), st_.opt.api_keys);
      if (!k) {
        ++st_.counters.unauthorized;
        res.set_header("WWW-Authenticate", "Bearer");
        return refuse(res, kStatusUnauthorized, "invalid_request_error",
                      "Missing or incorrect API key: send 'Authorization: Bearer <key>'", "invalid_api_key");
      }
      key = "key:" + *k;
    } else {
      key = "addr:" + head.remote_addr;
    }
    const bool has_body = head.has_header("Transfer-Encoding") ||
                          (head.has_header("Content-Length") && head.header("Content-Length") != "0");
    if (route->json_body && has_body && !is_json_content_type(head.header("Content-Type"))) {
      return refuse(res, kStatusUnsupportedMedia, "invalid_request_error",
                    "the body must be JSON sent with 'Content-Type: application/json' (got '" +
                        head.header("Content-Type") + "')",
                    "unsupported_media_type");
    }
    double retry = 0.0;
    if (head.path != "/health" && !rate_.allow(key, RateLimiter::Clock::now(), &retry)) {
      ++st_.counters.rate_limited;
      res.set_header("Retry-After", std::to_string(static_cast<long>(std::ceil(retry))));
      return refuse(res, kStatusTooManyRequests, "rate_limit_error", "too many requests for this key; retry later",
                    "rate_limit_exceeded");
    }
    return true;
  }

  bool runs_inline(const http::Request& req) const override {
    const Route* r = routes_.find(req.method, req.path);
    return r && r->runs_inline;
  }

  void handle(const http::Request& req, http::Response& res) override {
    RequestRecord& rec = current_record();
    rec = {};
    rec.id = res.headers.empty() ? std::string() : header_of(res, "X-Request-Id");
    const Route* r = routes_.find(req.method, req.path);
    if (!r) {
      set_error(st_, res, kStatusNotFound, "invalid_request_error", "no route for " + req.method + " " + req.path);
      return;
    }
    try {
      r->handler(req, res);
    } catch (const std::exception& e) {
      set_error(st_, res, kStatusInternal, "server_error", e.what());
    }
  }

  void finished(const http::Request& req, const http::Response& res, const http::Outcome& o) override {
    ++st_.counters.requests;
    if (o.status >= kStatusBadRequest) ++st_.counters.errors;
    if (st_.opt.log_format == LogFormat::Off) return;
    const RequestRecord& rec = current_record();
    AccessEntry e;
    e.id = header_of(res, "X-Request-Id");
    e.method = req.method;
    e.path = req.path;
    e.remote = req.remote_addr + ":" + std::to_string(req.remote_port);
    e.status = o.status;
    if (e.id == rec.id) {
      e.prompt_tokens = rec.prompt_tokens;
      e.completion_tokens = rec.completion_tokens;
    }
    e.streamed = o.streamed;
    e.latency_ms = o.latency_ms;
    const std::string line = format_access(e, st_.opt.log_format);
    if (st_.opt.log_sink) {
      st_.opt.log_sink(line);
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
  }

  http::Response error(int status, const std::string& message) override {
    http::Response res;
    const std::string type = status >= kStatusInternal ? "server_error" : "invalid_request_error";
    if (status == kStatusUnavailable) ++st_.counters.busy;
    set_json(res, error_body(status, type, message), status);
    return res;
  }

 private:
  bool refuse(http::Response& res, int status, const std::string& type, const std::string& message,
              const std::string& code) {
    if (status == kStatusUnavailable) res.set_header("Retry-After", std::to_string(kRetryAfterSeconds));
    set_json(res, error_body(status, type, message, "", code), status);
    return false;
  }

  static std::string header_of(const http::Response& res, std::string_view name) {
    for (const auto& [k, v] : res.headers) {
      if (http::iequals(k, name)) return v;
    }
    return {};
  }

  std::string allowed_methods(const std::string& path) const {
    std::string out;
    for (const char* m : {"GET", "POST"}) {
      if (routes_.find(m, path)) out += std::string(out.empty() ? "" : ", ") + m;
    }
    return out + (out.empty() ? "OPTIONS" : ", OPTIONS");
  }

  ServerState st_;
  OriginPolicy policy_;
  RateLimiter rate_;
  Routes routes_;
  http::Front front_;
};

std::vector<std::string> split_api_keys(const std::string& list) {
  std::vector<std::string> keys;
  std::stringstream ss(list);
  std::string k;
  while (std::getline(ss, k, ',')) {
    if (!k.empty()) keys.push_back(k);
  }
  return keys;
}

std::vector<std::string> read_api_key_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open the API key file");
  std::vector<std::string> keys;
  std::string line;
  const char* ws = " \t\r\n";
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(ws);
    if (b == std::string::npos) continue;
    keys.push_back(line.substr(b, line.find_last_not_of(ws) - b + 1));
  }
  if (keys.empty()) throw InvalidArgument(path + ": the API key file is empty");
  return keys;
}

HttpServer::HttpServer(Engine& engine, ServerOptions options)
    : app_(std::make_unique<HttpApp>(engine, std::move(options))) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::bind() {
  const ServerOptions& o = app_->state().opt;
  return app_->front().bind(o.host, o.port);
}

bool HttpServer::serve() { return app_->front().run(); }

void HttpServer::stop() {
  app_->state().engine.shutdown();
  app_->front().stop();
}

ServerState& HttpServer::state() { return app_->state(); }

http::FrontStats HttpServer::front_stats() const { return app_->front().stats(); }

}  // namespace ferrite::server
