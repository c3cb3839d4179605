// What a route sees of an HTTP exchange: the parsed request (with a link to
// its client, which tells when the client has gone), and the response it
// fills in, either whole or as a stream written piece by piece.
//
//   void handler(const Request& req, Response& res) {
//     res.set_content(R"({"ok":true})", "application/json");       // whole
//     res.stream = [](StreamSink& sink) { sink.write("data: 1\n\n"); };  // or streamed
//   }
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ferrite::server::http {

// Case-insensitive ASCII comparison (header names).
bool iequals(std::string_view a, std::string_view b);

using Headers = std::vector<std::pair<std::string, std::string>>;

// The client side of one connection, shared by the front and the handlers:
// the front marks it gone when the peer hangs up (or the server shuts down),
// which runs the callbacks registered by handlers and sets the flag that
// long computations poll (schema conversion, template rendering).
class ClientLink {
 public:
  bool gone() const { return gone_.load(std::memory_order_acquire); }
  // The flag itself, for code that polls it (grammar and template limits).
  const std::atomic<bool>* flag() const { return &gone_; }

  // `fn` runs once when the client goes (at once when it already has); it
  // must be short and must not block. Returns a handle for forget().
  uint64_t on_gone(std::function<void()> fn);
  void forget(uint64_t handle);
  // Marks the client gone and runs the callbacks (idempotent).
  void mark_gone();

 private:
  std::atomic<bool> gone_{false};
  std::mutex mu_;
  std::map<uint64_t, std::function<void()>> callbacks_;
  uint64_t next_ = 1;
};

// Runs `fn` when the client goes, for the guard's lifetime.
class GoneGuard {
 public:
  GoneGuard(std::shared_ptr<ClientLink> link, std::function<void()> fn);
  ~GoneGuard();
  GoneGuard(const GoneGuard&) = delete;
  GoneGuard& operator=(const GoneGuard&) = delete;

 private:
  std::shared_ptr<ClientLink> link_;
  uint64_t handle_ = 0;
};

struct Request {
  std::string method;
  std::string target;  // as sent: path and query
  std::string path;    // the target up to '?'
  std::string query;   // after '?', undecoded
  int version = 11;    // 10 or 11
  Headers headers;
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  std::shared_ptr<ClientLink> client = std::make_shared<ClientLink>();

  // The first header of that name ("" when absent).
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
  // A query parameter, percent-decoded ("" when absent).
  std::string param(std::string_view name) const;
};

// Where a streamed response goes. write() blocks while the client is slow
// to read (bounded by the front's write timeout) and returns false once the
// client is gone; then the handler should stop.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  virtual bool write(std::string_view data) = 0;
};

struct Response {
  int status = 200;
  Headers headers;
  std::string body;
  std::string content_type;
  // When set, the body is streamed (chunked) by calling this once on the
  // handler's thread after the handler returns; `body` is ignored.
  std::function<void(StreamSink&)> stream;

  void set_header(std::string name, std::string value);
  void set_content(std::string body_text, std::string type);
};

// "200 OK"-style reason phrase.
const char* status_text(int status);

// Percent-decoding of a query component ('+' is a space); invalid escapes
// are kept as written.
std::string percent_decode(std::string_view s);

}  // namespace ferrite::server::http
