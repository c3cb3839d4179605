// Continuous batching: concurrent clients get what they get alone; prefix
// reuse; a full queue answers 503; a client that hangs up frees its slot.
#include <future>
#include <thread>

#include <gtest/gtest.h>

#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

std::string greedy(const TestServer& srv, const std::string& prompt, int n) {
  auto [status, body] = srv.post("/v1/completions", {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}});
  EXPECT_EQ(status, 200) << body.dump();
  return status == 200 ? body["choices"][0]["text"].get<std::string>() : "";
}

std::string streamed_text(const TestServer& srv, const std::string& prompt, int n) {
  std::string text;
  for (const std::string& e : srv.stream("/v1/completions",
                                         {{"prompt", prompt}, {"max_tokens", n}, {"temperature", 0}, {"stream", true}})) {
    if (e == "[DONE]") break;
    const Json j = Json::parse(e);
    if (!j["choices"].empty()) text += j["choices"][0]["text"].get<std::string>();
  }
  return text;
}

TEST(ServerScheduling, ConcurrentClientsGetTheirSingleClientOutput) {
  ServerConfig cfg;
  cfg.parallel = 4;
  cfg.n_batch = 16;  // long prompts are read in chunks beside running streams
  FERRITE_TEST_SERVER(srv, cfg);
  const std::string golden = golden_greedy_text();
  const std::vector<std::string> prompts = {"", "Lily went to the park", "One day, a cat", "",
                                            "The little dog was very happy because", "Tom", "", "Once upon a time"};
  constexpr int kTokens = 120;
  std::vector<std::string> alone;
  for (const auto& p : prompts) alone.push_back(greedy(srv, p, kTokens));
  for (size_t i = 0; i < prompts.size(); ++i) {
    // Every story token of this vocabulary is at least one byte: 120 tokens
    // are at least 120 bytes (an empty or cut answer fails here).
    EXPECT_GE(alone[i].size(), static_cast<size_t>(kTokens)) << "client " << i;
    if (prompts[i].empty()) {
      EXPECT_EQ(alone[i], golden.substr(0, alone[i].size()));
    }
  }
  std::vector<std::future<std::string>> results;
  for (size_t i = 0; i < prompts.size(); ++i) {
    results.push_back(std::async(std::launch::async, [&, i] {
      return i % 2 ? streamed_text(srv, prompts[i], kTokens) : greedy(srv, prompts[i], kTokens);
    }));
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(results[i].get(), alone[i]) << "client " << i;
  EXPECT_GT(srv.engine().stats().steps, 0u);
}

TEST(ServerScheduling, PrefixReuseSkipsCachedPromptTokens) {
  ServerConfig cfg;
  cfg.parallel = 1;
  FERRITE_TEST_SERVER(srv, cfg);
  const std::string base = golden_greedy_text().substr(0, 200);
  auto first = srv.post("/v1/completions", {{"prompt", base}, {"max_tokens", 1}, {"temperature", 0}});
  ASSERT_EQ(first.first, 200);
  const int64_t n_base = first.second["usage"]["prompt_tokens"];
  EXPECT_EQ(first.second["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  auto second = srv.post("/v1/completions", {{"prompt", base + " The end."}, {"max_tokens", 1}, {"temperature", 0}});
  ASSERT_EQ(second.first, 200);
  const int64_t n_second = second.second["usage"]["prompt_tokens"];
  const int64_t cached = second.second["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, n_base - 2);  // the last token or two may tokenize differently
  EXPECT_LT(cached, n_second);
  auto slots = srv.get("/slots");
  EXPECT_EQ(slots.second[0]["n_prompt_cached"], cached);
  // Reuse must not change results: the same request on a fresh server.
  FERRITE_TEST_SERVER(fresh, cfg);
  EXPECT_EQ(greedy(srv, base + " Then", 30), greedy(fresh, base + " Then", 30));
}

// Prefix cache: a prompt that starts as another, busy slot's cache takes a
// copy of those cells instead of evaluating them, and answers what a server
// without the copy answers.
TEST(ServerScheduling, PrefixOfAnotherSlotIsCopiedNotEvaluated) {
  const std::string base = golden_greedy_text().substr(0, 200);
  const Json b_body = {{"prompt", base + " The end."}, {"max_tokens", 20}, {"temperature", 0}};
  ServerConfig plain;
  plain.engine = [](EngineOptions& o) { o.prefix_cache = false; };
  FERRITE_TEST_SERVER(fresh, plain);
  const auto [fresh_status, fresh_body] = fresh.post("/v1/completions", b_body);
  ASSERT_EQ(fresh_status, 200);
  EXPECT_EQ(fresh_body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const std::string want = fresh_body["choices"][0]["text"];
  EXPECT_FALSE(want.empty());

  ServerConfig cfg;
  cfg.parallel = 2;
  cfg.n_batch = 512;  // A's prompt in one step
  FERRITE_TEST_SERVER(srv, cfg);
  srv.gate().close();  // the engine waits after each step
  std::thread a([&] {
    httplib::Client c = srv.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = Json{{"prompt", base}, {"max_tokens", 20}, {"temperature", 0}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return true; };
    c.send(req);
  });
  // Held after A's first step: A is generating in slot 0, its prompt in the cache.
  if (!srv.gate().hold_until([&] { return srv.engine().stats().active == 1; })) {
    srv.gate().open();
    a.join();
    FAIL() << "the engine did not start A";
  }
  auto b = std::async(std::launch::async, [&] { return srv.post("/v1/completions", b_body); });
  while (srv.engine().stats().queued == 0) std::this_thread::yield();  // the held engine cannot take B
  srv.gate().open();
  const auto [status, body] = b.get();
  a.join();
  ASSERT_EQ(status, 200) << body.dump();
  const int64_t n_prompt = body["usage"]["prompt_tokens"];
  const int64_t cached = body["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GE(cached, n_prompt - 6);  // all but " The end." (and a token at the seam)
  EXPECT_LT(cached, n_prompt);
  EXPECT_EQ(srv.engine().stats().prefix_copied_tokens, static_cast<uint64_t>(cached));  // from A's busy slot
  EXPECT_EQ(body["choices"][0]["text"], want);
}

// Requests that arrive together with the same long start: it is evaluated
// once (the second waits for the first slot to read it, then copies it, or
// finds it in that slot), and each gets what a server without the cache
// answers.
TEST(ServerScheduling, SharedStartOfConcurrentPromptsIsEvaluatedOnce) {
  ServerConfig cfg;
  cfg.parallel = 2;
  cfg.n_batch = 16;  // the first prompt takes several steps
  FERRITE_TEST_SERVER(srv, cfg);
  const std::string base = golden_greedy_text().substr(0, 700);
  const Json a_body = {{"prompt", base + " The end."}, {"max_tokens", 8}, {"temperature", 0}};
  const Json b_body = {{"prompt", base + " Then a bird came."}, {"max_tokens", 8}, {"temperature", 0}};
  auto a = std::async(std::launch::async, [&] { return srv.post("/v1/completions", a_body); });
  auto b = std::async(std::launch::async, [&] { return srv.post("/v1/completions", b_body); });
  const auto [a_status, a_res] = a.get();
  const auto [b_status, b_res] = b.get();
  ASSERT_EQ(a_status, 200);
  ASSERT_EQ(b_status, 200);
  const auto n_base = static_cast<uint64_t>(srv.post("/tokenize", {{"content", base}}).second["tokens"].size());
  ASSERT_GT(n_base, 50u);
  const uint64_t n_a = a_res["usage"]["prompt_tokens"], n_b = b_res["usage"]["prompt_tokens"];
  // Both prompts in full would be n_a + n_b. With the cache the base is read
  // once: the later request waits for it and copies it, or (arriving when
  // fewer than Engine::kPrefixWaitMin of its tokens are still to come)
  // copies what is there and reads the rest itself; give or take the tokens
  // at the seam.
  EXPECT_LE(srv.engine().stats().prompt_tokens, n_a + n_b - n_base + Engine::kPrefixWaitMin + 8)
      << "prompts of " << n_a << " and " << n_b << " tokens, base " << n_base;
  ServerConfig plain = cfg;
  plain.engine = [](EngineOptions& o) { o.prefix_cache = false; };
  FERRITE_TEST_SERVER(fresh, plain);
  EXPECT_EQ(a_res["choices"][0]["text"], fresh.post("/v1/completions", a_body).second["choices"][0]["text"]);
  EXPECT_EQ(b_res["choices"][0]["text"], fresh.post("/v1/completions", b_body).second["choices"][0]["text"]);
}

TEST(ServerScheduling, FullQueueAnswers503WithRetryAfter) {
  ServerConfig cfg;
  cfg.parallel = 1;
  cfg.max_queue = 0;
  FERRITE_TEST_SERVER(srv, cfg);
  srv.gate().close();
  std::promise<void> started;
  std::string body;
  std::thread a([&] {
    httplib::Client c = srv.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = Json{{"prompt", ""}, {"max_tokens", 50}, {"temperature", 0}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    bool first = true;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      body.append(data, n);
      if (first) started.set_value();
      first = false;
      return true;
    };
    c.send(req);
  });
  started.get_future().wait();  // A holds the only slot (or the only queue place)
  httplib::Client c = srv.client();
  auto b = c.Post("/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}}.dump(), "application/json");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->status, 503);
  EXPECT_EQ(b->get_header_value("Retry-After"), "1");
  EXPECT_TRUE(Json::parse(b->body).contains("error"));
  srv.gate().open();
  a.join();
  std::string text;
  for (const std::string& e : sse_payloads(body)) {
    if (e != "[DONE]") text += Json::parse(e)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, golden_greedy_text().substr(0, text.size()));
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(srv.post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).first, 200);
}

TEST(ServerScheduling, DisconnectFreesTheSlot) {
  ServerConfig cfg;
  cfg.parallel = 1;
  FERRITE_TEST_SERVER(srv, cfg);
  srv.gate().close();
  {
    httplib::Client c = srv.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = Json{{"prompt", ""}, {"max_tokens", 400}, {"temperature", 0}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return false; };  // hang up
    c.send(req);
  }
  srv.http().state().counters.wait_disconnects(1);
  srv.gate().open();
  srv.engine().wait_cancelled(1);
  auto slots = srv.get("/slots");
  ASSERT_EQ(slots.first, 200);
  EXPECT_EQ(slots.second[0]["state"], "idle");
  EXPECT_LT(slots.second[0]["n_decoded"].get<int>(), 400);
  // The slot serves the next client.
  const std::string next = greedy(srv, "", 5);
  EXPECT_GE(next.size(), 5u);  // five tokens of at least one byte
  EXPECT_EQ(next, golden_greedy_text().substr(0, next.size()));
}

}  // namespace
}  // namespace ferrite::server::test
