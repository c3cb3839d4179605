// An in-process server on a loopback port with stories260K, and a small
// HTTP client for the tests.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "server/engine.h"
#include "server/http_server.h"
#include "support/test_data.h"

namespace ferrite::server::test {

using Json = nlohmann::ordered_json;

// Holds the engine thread after a step while closed (the engine's after_step hook).
class Gate {
 public:
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  void open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = false;
    }
    cv_.notify_all();
  }
  void pass() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !closed_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
};

struct ServerConfig {
  int parallel = 2;
  int64_t n_ctx = 1024;
  int64_t n_batch = 64;
  size_t max_queue = 16;
  std::string api_key;
  size_t max_body = 1u << 20;
  bool context_shift = true;
  // LoRA adapter files for the engine (loaded against the server's model) and their default scales.
  std::vector<std::string> lora = {};
  std::vector<float> lora_scales = {};
  // Changes to the server's and the engine's options after the above.
  std::function<void(ServerOptions&)> server;
  std::function<void(EngineOptions&)> engine;
};

class TestServer {
 public:
  TestServer(const std::string& model_path, const ServerConfig& cfg);
  ~TestServer();

  int port() const { return port_; }
  Engine& engine() { return *engine_; }
  HttpServer& http() { return *http_; }
  Gate& gate() { return gate_; }
  httplib::Client client() const;

  // POST a JSON body; returns status and parsed body (null when not JSON).
  std::pair<int, Json> post(const std::string& path, const Json& body, const std::string& key = {}) const;
  std::pair<int, Json> get(const std::string& path, const std::string& key = {}) const;
  // POST with stream: the `data:` payloads in order (the last is "[DONE]").
  std::vector<std::string> stream(const std::string& path, const Json& body) const;

 private:
  Gate gate_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<HttpServer> http_;
  std::thread thread_;
  int port_ = 0;
};

// The `data:` payloads of an SSE body.
std::vector<std::string> sse_payloads(const std::string& body);

// The greedy continuation of BOS (shared golden from llama2.c / llama.cpp).
std::string golden_greedy_text();

// Resident memory of this process (the server runs in it), in bytes.
size_t resident_bytes();

}  // namespace ferrite::server::test

#define FERRITE_TEST_SERVER(var, cfg)                                       \
  FERRITE_SHARED_FILE(var##_model, "models/stories260K.gguf");              \
  ::ferrite::server::test::TestServer var(var##_model.string(), cfg)
