// What the HTTP routes share: the engine, the options, the chat formatter,
// the disconnect watch and the request counters.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/chat_format.h"
#include "server/disconnect_watch.h"
#include "server/engine.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ferrite::server {

using Json = nlohmann::ordered_json;

constexpr size_t kDefaultMaxBodyBytes = 16u << 20;
constexpr int kDefaultReadTimeoutSeconds = 10;
constexpr int kRetryAfterSeconds = 1;

enum class LogFormat { Text, Json, Off };

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0: any free port
  std::string api_key;                    // empty: no authentication
  std::string model_id;                   // the name /v1/models reports
  std::string model_path;
  std::string chat_template;              // a built-in name or a file; empty: the model's
  LogFormat log_format = LogFormat::Text;
  std::function<void(const std::string&)> log_sink;  // default: stderr
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  int read_timeout_s = kDefaultReadTimeoutSeconds;
  int http_threads = 0;                   // 0: enough for every slot and queued request
};

// Per-request facts the access log reports (set by the route, read after the
// response is written, on the same thread).
struct RequestRecord {
  std::string id;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  bool streamed = false;
};
RequestRecord& current_record();

struct HttpCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> errors{0};        // 4xx and 5xx
  std::atomic<uint64_t> unauthorized{0};
  std::atomic<uint64_t> busy{0};          // 503

  // Clients that hung up mid-request.
  void note_disconnect();
  uint64_t disconnects() const;
  // Blocks until at least `n` disconnects were noticed.
  void wait_disconnects(uint64_t n) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  uint64_t disconnects_ = 0;
};

struct ServerState {
  Engine& engine;
  ServerOptions opt;
  runtime::ChatFormatter chat;
  DisconnectWatch watch;
  HttpCounters counters;
  int listen_fd = -1;  // the listening socket, once bound (HttpServer::bind)

  ServerState(Engine& e, ServerOptions o);
};

// Watches the connection between the ports; cancels `tasks` when the client hangs up.
std::unique_ptr<WatchGuard> watch_client(ServerState& st, int local_port, int remote_port,
                                         const std::vector<std::shared_ptr<Task>>& tasks);

// Serializes a response body (invalid UTF-8 replaced).
std::string dump(const Json& j);

}  // namespace ferrite::server
