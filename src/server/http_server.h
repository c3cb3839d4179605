// The HTTP front of the server: routes, API-key check, access log, and the
// start/stop life cycle around an Engine.
//
//   Engine engine(model, tok, {...});
//   HttpServer http(engine, {.port = 0});
//   int port = http.bind();          // the port actually bound
//   std::thread t([&] { http.serve(); });
//   ...
//   http.stop(); t.join();
#pragma once

#include <memory>

#include "server/engine.h"
#include "server/server_state.h"

namespace httplib {
class Server;
}

namespace ferrite::server {

class HttpServer {
 public:
  // Throws what the chat template loader throws.
  HttpServer(Engine& engine, ServerOptions options);
  ~HttpServer();

  // Binds host:port (port 0: a free one) and returns the port. Throws IoError.
  int bind();
  // Serves until stop() (returns false when not bound).
  bool serve();
  // Cancels in-flight requests, stops accepting and makes serve() return.
  // Safe from any thread (not from a signal handler).
  void stop();

  ServerState& state() { return *state_; }

 private:
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<httplib::Server> http_;
};

// Reads the key of --api-key-file (surrounding whitespace dropped). Throws IoError
// or InvalidArgument for an empty key.
std::string read_api_key_file(const std::string& path);

}  // namespace ferrite::server
