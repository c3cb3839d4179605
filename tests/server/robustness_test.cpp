// Many clients and hostile requests: 32 simultaneous streaming clients on a
// synth model each get what they get alone, and malformed, oversized or
// never-finished requests are refused (or time out) while a running stream
// and new clients keep being served, with bounded memory.
#include <cstdio>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "raw_client.h"
#include "server_fixture.h"
#include "support/sanitizers.h"

namespace ferrite::server::test {
namespace {

constexpr int kClients = 32;
constexpr int kTokensPerClient = 24;

// Token-id prompts: the synth model's vocabulary has no meaningful text, and
// ids give every client a distinct prompt of a known length.
Json id_prompt(int i) { return Json::array({1, 100 + 7 * i, 200 + 3 * i, 300 + i}); }

Json greedy_request(int i, bool stream) {
  return {{"prompt", id_prompt(i)}, {"max_tokens", kTokensPerClient}, {"temperature", 0}, {"stream", stream}};
}

// The generated text of a streamed completion, or "" (and a failure) when the
// stream did not end with [DONE] after a finish_reason.
std::string streamed_text(const TestServer& srv, int i) {
  std::string text;
  bool finished = false, done = false;
  for (const std::string& e : srv.stream("/v1/completions", greedy_request(i, true))) {
    if (e == "[DONE]") {
      done = true;
      break;
    }
    const Json j = Json::parse(e);
    if (j["choices"].empty()) continue;
    text += j["choices"][0]["text"].get<std::string>();
    if (!j["choices"][0]["finish_reason"].is_null()) finished = true;
  }
  EXPECT_TRUE(finished && done) << "client " << i << ": stream cut short";
  return text;
}

TEST(ServerConcurrency, ThirtyTwoStreamingClientsGetTheirSingleClientOutput) {
  FERRITE_SHARED_FILE(model, "models/synth/synth-llama-Q4_0.gguf");
  ServerConfig cfg;
  cfg.parallel = 8;  // 32 clients over 8 slots: the queue holds the rest
  cfg.n_ctx = 8 * 64;
  cfg.max_queue = kClients;
  TestServer srv(model.string(), cfg);

  // Alone, one after another.
  std::vector<std::string> alone;
  for (int i = 0; i < kClients; ++i) {
    auto [status, body] = srv.post("/v1/completions", greedy_request(i, false));
    ASSERT_EQ(status, 200) << body.dump();
    ASSERT_EQ(body["usage"]["completion_tokens"], kTokensPerClient) << "client " << i;
    alone.push_back(body["choices"][0]["text"].get<std::string>());
  }
  // All at once, streamed. Quantized activations are rounded per token row,
  // so a token's logits do not depend on which others share its batch: the
  // greedy text must be the same as alone.
  std::vector<std::future<std::string>> together;
  for (int i = 0; i < kClients; ++i) {
    together.push_back(std::async(std::launch::async, [&srv, i] { return streamed_text(srv, i); }));
  }
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(together[i].get(), alone[i]) << "client " << i;
}

std::string nested_array(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ServerRobustness, HostileRequestsAreRefusedWhileOthersAreServed) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});  // 2 slots, 1 MiB bodies
  const std::string golden = golden_greedy_text();

  // A long stream runs through everything below.
  auto running = std::async(std::launch::async, [&srv] {
    std::string text;
    for (const std::string& e : srv.stream("/v1/completions",
                                           {{"prompt", ""}, {"max_tokens", 150}, {"temperature", 0}, {"stream", true}})) {
      if (e == "[DONE]") break;
      const Json j = Json::parse(e);
      if (!j["choices"].empty()) text += j["choices"][0]["text"].get<std::string>();
    }
    return text;
  });

  // Slow clients that never finish their request line or headers.
  std::vector<std::unique_ptr<RawClient>> slow;
  for (const char* partial : {"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Le", "GET /hea",
                              "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\": "}) {
    slow.push_back(std::make_unique<RawClient>(srv.port()));
    EXPECT_TRUE(slow.back()->connected() && slow.back()->send(partial));
  }

  const size_t rss_before = resident_bytes();
  httplib::Client c = srv.client();
  const auto raw_post = [&c](const std::string& body) {
    auto r = c.Post("/v1/completions", body, "application/json");
    return r ? r->status : -1;
  };
  // Bad UTF-8 inside a JSON string, truncated and non-JSON bodies.
  EXPECT_EQ(raw_post("{\"prompt\": \"caf\xc3\x28 \xff\xfe\", \"max_tokens\": 4}"), 400);
  EXPECT_EQ(raw_post("{\"prompt\": \"abc\", \"max_tokens\": "), 400);
  EXPECT_EQ(raw_post(std::string("\0\x01\x02garbage", 10)), 400);
  // Deeply nested JSON: as a value of a known field and as the whole body.
  EXPECT_EQ(raw_post("{\"prompt\": " + nested_array(200000) + "}"), 400);
  EXPECT_EQ(raw_post(nested_array(400000)), 400);
  // Numbers out of range or of the wrong sign.
  for (const Json& body : {Json{{"prompt", "a"}, {"max_tokens", 1e15}}, Json{{"prompt", "a"}, {"max_tokens", -5}},
                           Json{{"prompt", "a"}, {"n", -1}}, Json{{"prompt", "a"}, {"n", 1000000}},
                           Json{{"prompt", "a"}, {"temperature", -1e308}}, Json{{"prompt", Json::array({-3, 5})}},
                           Json{{"prompt", Json::array({int64_t{1} << 40})}}, Json{{"prompt", "a"}, {"seed", "x"}},
                           Json{{"prompt", "a"}, {"logit_bias", {{"99999999", 5}}}}}) {
    EXPECT_EQ(srv.post("/v1/completions", body).first, 400) << body.dump();
  }
  // A 100 MB body is refused by its size (413) without being kept.
  EXPECT_EQ(raw_post(std::string(100u << 20, ' ')), 413);
  // Memory stays bounded: far less than the 100 MB refused above. (Not under
  // AddressSanitizer: its quarantine keeps freed blocks, such as this test's
  // own 100 MB body, resident.)
#if !FERRITE_TEST_ASAN
  constexpr size_t kMaxGrowth = 48u << 20;
  EXPECT_LT(resident_bytes(), rss_before + kMaxGrowth);
#else
  (void)rss_before;
#endif

  // New clients are served while the slow connections are still open.
  auto [status, body] = srv.post("/v1/completions", {{"prompt", ""}, {"max_tokens", 8}, {"temperature", 0}});
  ASSERT_EQ(status, 200);
  const std::string short_text = body["choices"][0]["text"].get<std::string>();
  EXPECT_FALSE(short_text.empty());
  EXPECT_EQ(short_text, golden.substr(0, short_text.size()));
  EXPECT_EQ(srv.get("/health").first, 200);
  // And the stream that ran through it all is the golden story.
  const std::string text = running.get();
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text, golden.substr(0, text.size()));
}

}  // namespace
}  // namespace ferrite::server::test
