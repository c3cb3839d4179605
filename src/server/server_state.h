// What the HTTP routes share: the engine, the options, the chat formatter
// and the request counters.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/interpreter.h"
#include "grammar/json_schema.h"
#include "runtime/chat_format.h"
#include "runtime/prompt_text.h"
#include "server/engine.h"
#include "server/fim.h"
#include "server/http/front.h"
#include "server/http/message.h"

namespace ferrite::server {

using Json = nlohmann::ordered_json;

constexpr size_t kDefaultMaxBodyBytes = 16u << 20;
constexpr int kDefaultReadTimeoutSeconds = 30;
constexpr int kRetryAfterSeconds = 1;
// /tokenize answers of at most this many bytes (with pieces, an answer is
// ~40 bytes a token: a 16 MiB body could otherwise ask for ~200x itself).
constexpr size_t kDefaultMaxTokenizeResponseBytes = 32u << 20;

enum class LogFormat { Text, Json, Off };

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0: any free port
  std::vector<std::string> api_keys;      // empty: no authentication
  std::string model_id;                   // the name /v1/models reports
  std::string model_path;
  std::string chat_template;              // a built-in name or a file; empty: the model's
  LogFormat log_format = LogFormat::Text;
  std::function<void(const std::string&)> log_sink;  // default: stderr
  size_t max_body_bytes = kDefaultMaxBodyBytes;
  int read_timeout_s = kDefaultReadTimeoutSeconds;  // the body, once the headers are in
  int http_threads = 0;                   // 0: enough for every slot and queued request

  // The HTTP front's other limits (header bytes and count, deadlines,
  // connections); max_body_bytes, read_timeout_s and http_threads above
  // override the matching fields.
  http::FrontOptions front;
  // Browsers: pages from these origins may call the API ("*": any); others
  // are refused (403). Requests must name a loopback host when the server
  // listens on loopback (DNS rebinding).
  std::vector<std::string> cors_origins;
  bool props_paths = false;               // /props shows the model's file path
  bool webui = true;                      // the chat page at / (routes_webui.cpp)
  bool strict_model = false;              // a request naming another model gets 404
  bool embeddings = false;                // /v1/embeddings for decoder models too
  double rate_limit_per_minute = 0.0;     // per API key (or client address); 0: none
  std::string slot_save_path;             // folder for /slots save/restore; empty: refused
  size_t max_tokenize_response_bytes = kDefaultMaxTokenizeResponseBytes;
  grammar::SchemaLimits schema_limits;    // JSON schema -> grammar work
  chat::Limits template_limits;           // chat template rendering work
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
  std::atomic<uint64_t> forbidden{0};     // Host / Origin refused
  std::atomic<uint64_t> rate_limited{0};  // 429
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
  runtime::SpecialTextGuard guard;  // control-token texts of the vocabulary (chat prompts)
  FimTokens fim;                    // the vocabulary's fill-in-the-middle tokens (/infill)
  HttpCounters counters;
  std::function<http::FrontStats()> front_stats;  // set by HttpServer

  ServerState(Engine& e, ServerOptions o);
};

// Cancels `tasks` when the client hangs up, for the guard's lifetime.
std::unique_ptr<http::GoneGuard> watch_client(ServerState& st, const std::shared_ptr<http::ClientLink>& client,
                                              const std::vector<std::shared_ptr<Task>>& tasks);

// A streamed answer's hold on its tasks: they are cancelled when the client
// hangs up, and when the stream ends or is dropped without running.
struct TaskHold {
  std::vector<std::shared_ptr<Task>> tasks;
  std::unique_ptr<http::GoneGuard> guard;
  ~TaskHold();
};
std::shared_ptr<TaskHold> hold_tasks(ServerState& st, const std::shared_ptr<http::ClientLink>& client,
                                     const std::vector<std::shared_ptr<Task>>& tasks);

// Serializes a response body (invalid UTF-8 replaced).
std::string dump(const Json& j);

}  // namespace ferrite::server
