// An in-process server on a loopback port with stories260K, and a small
// HTTP client for the tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
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

// Holds the engine thread after each step while closed (the engine's
// after_step hook). A test closes it, then hold_until() waits for the engine
// to stand at the gate after a step that left the server in the state it
// needs (earlier steps are let through one at a time): with the engine held,
// what the test then reads and does cannot race with it.
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
  // Engine side.
  void pass() {
    std::unique_lock<std::mutex> lock(mu_);
    if (!closed_) return;
    ++arrivals_;
    held_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return !closed_ || grants_ > 0; });
    if (grants_ > 0) --grants_;
    held_ = false;
  }
  // Test side, gate closed: true with the engine held after a step for
  // which ready() is true (ready() runs while the engine is held); false when
  // the engine has not come to the gate for a minute (a failure, not a wait
  // the test relies on).
  bool hold_until(const std::function<bool()>& ready) {
    const auto limit = std::chrono::minutes(1);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!cv_.wait_for(lock, limit, [&] { return held_ && grants_ == 0; })) return false;
      lock.unlock();
      const bool ok = ready();
      lock.lock();
      if (ok) return true;
      const uint64_t seen = arrivals_;
      ++grants_;
      cv_.notify_all();
      if (!cv_.wait_for(lock, limit, [&] { return arrivals_ > seen; })) return false;
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool closed_ = false;
  bool held_ = false;
  int grants_ = 0;
  uint64_t arrivals_ = 0;
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
