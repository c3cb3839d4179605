// The HTTP/1.1 front of the server: event-driven socket I/O on one thread
// (Boost.Asio), request parsing with limits (RequestReader), per-phase
// deadlines, a connection limit, bounded output per connection, and a pool
// of worker threads for handlers that block.
//
// Why this shape: a slow or stuck client costs one socket and a few KiB, not
// a thread. Reading headers, reading a body, waiting between requests and
// writing a response each have their own deadline, so a client that trickles
// bytes (slowloris) or never reads its stream is dropped, and the I/O thread
// keeps accepting and answering cheap routes (/health) whatever the workers
// are doing. When the connection limit is reached, the oldest connection
// still waiting for or sending its request is closed to make room.
//
//   Front front(options, app);
//   int port = front.bind("127.0.0.1", 0);
//   std::thread t([&] { front.run(); });   // returns after stop()
//   ...
//   front.stop(); t.join();
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "server/http/message.h"
#include "server/http/request_reader.h"

namespace ferrite::server::http {

struct FrontOptions {
  ReaderLimits reader;
  double header_timeout_s = 10.0;   // first byte of a request -> end of its headers
  double body_timeout_s = 30.0;     // end of the headers -> end of the body
  double idle_timeout_s = 5.0;      // keep-alive wait for the next request
  double write_timeout_s = 30.0;    // a response that makes no progress this long is dropped
  size_t max_connections = 512;
  size_t max_pending_output = 1u << 20;  // bytes queued per connection before a stream waits
  int worker_threads = 16;
  size_t worker_queue = 64;         // requests waiting for a worker beyond the idle ones (then 503)
  double shutdown_grace_s = 5.0;    // stop(): time left to responses in flight
  double linger_s = 2.0;            // after an early refusal: time to drain the unread body
  size_t linger_bytes = 1u << 30;   // ... and bytes
};

// What happened to one exchange, for the access log.
struct Outcome {
  int status = 0;
  bool streamed = false;
  bool client_gone = false;   // the client hung up (or the server stopped) before the end
  double latency_ms = 0.0;    // headers complete -> handler (and stream) done
};

// The application behind the front. admit() and error() run on the I/O
// thread; handle() and finished() run on the same thread as each other: the
// I/O thread for inline requests, a worker otherwise.
class Application {
 public:
  virtual ~Application() = default;
  // After the headers, before the body is read: fills `res` with headers
  // every answer carries, and returns false to refuse the request with
  // `res` (the body is then not read).
  virtual bool admit(const Request& head, Response& res) = 0;
  // Requests answered on the I/O thread: cheap and never blocking.
  virtual bool runs_inline(const Request& req) const = 0;
  virtual void handle(const Request& req, Response& res) = 0;
  virtual void finished(const Request& req, const Response& res, const Outcome& outcome) = 0;
  // The response for a request the front itself refuses (malformed, too
  // large, too slow, server busy).
  virtual Response error(int status, const std::string& message) = 0;
};

struct FrontStats {
  uint64_t accepted = 0;
  uint64_t evicted = 0;      // closed to make room for a new connection
  uint64_t timed_out = 0;    // dropped by a deadline
  uint64_t refused = 0;      // malformed or over a limit
  size_t open = 0;           // connections now
  size_t busy = 0;           // requests on a worker now (running or waiting for one)
};

class Front {
 public:
  Front(const FrontOptions& options, Application& app);
  ~Front();
  Front(const Front&) = delete;
  Front& operator=(const Front&) = delete;

  // Binds host:port (port 0: any free one) and listens; returns the port.
  // Throws IoError.
  int bind(const std::string& host, int port);
  // Serves until stop(); returns false when not bound.
  bool run();
  // Stops accepting, marks every client gone (so handlers give up), lets
  // responses in flight finish within the grace period, then makes run()
  // return. Safe from any thread (not a signal handler); idempotent.
  void stop();

  FrontStats stats() const;

  struct Impl;  // front.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferrite::server::http
