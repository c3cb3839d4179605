// The server's HTTP side: routes, the checks every request passes before its
// body is read (route, Host and Origin, API key, content type, rate), the
// access log, and the start/stop life cycle around an Engine. The sockets
// are the front's (server/http/front.h).
//
//   Engine engine(model, tok, {...});
//   HttpServer http(engine, {.port = 0});
//   int port = http.bind();          // the port actually bound
//   std::thread t([&] { http.serve(); });
//   ...
//   http.stop(); t.join();
#pragma once

#include <memory>
#include <string>

#include "server/engine.h"
#include "server/server_state.h"

namespace ferrite::server {

class HttpApp;

class HttpServer {
 public:
  // Throws what the chat template loader throws, InvalidArgument for bad options.
  HttpServer(Engine& engine, ServerOptions options);
  ~HttpServer();

  // Binds host:port (port 0: a free one) and returns the port. Throws IoError.
  int bind();
  // Serves until stop() (returns false when not bound).
  bool serve();
  // Cancels in-flight requests (the engine's and the conversions'), stops
  // accepting and makes serve() return once the answers in flight are out
  // (within the shutdown grace). Safe from any thread (not from a signal
  // handler); idempotent.
  void stop();

  ServerState& state();
  http::FrontStats front_stats() const;

 private:
  std::unique_ptr<HttpApp> app_;
};

// Reads the keys of --api-key-file: one per line, surrounding whitespace
// dropped, empty lines skipped. Throws IoError, or InvalidArgument when it
// holds no key.
std::vector<std::string> read_api_key_file(const std::string& path);

// Splits --api-key's comma-separated keys (empty ones dropped).
std::vector<std::string> split_api_keys(const std::string& list);

}  // namespace ferrite::server
