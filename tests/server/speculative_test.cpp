// Speculative decoding per slot (server/engine_draft.cpp): with n-gram
// lookup or a draft model, concurrent clients get the same greedy text as
// a server without speculation; the native endpoint reports draft_n and
// draft_n_accepted, /metrics the totals; the target as its own draft has
// every draft token accepted.
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/drafter.h"
#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

Json complete(const TestServer& srv, const std::string& prompt, int n) {
  auto [status, body] = srv.post("/completion", {{"prompt", prompt}, {"n_predict", n}, {"temperature", 0}});
  EXPECT_EQ(status, 200) << body.dump();
  return body;
}

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {
      "", "Lily was sad and didn't know what to do. Lily was sad and didn't know what to do.", "One day, a cat",
      "Tom"};
  return p;
}

// Each prompt's text alone on a plain server, then concurrently on `srv`.
void expect_same_text(TestServer& srv, TestServer& plain, int n) {
  std::vector<std::string> alone;
  for (const std::string& p : prompts()) alone.push_back(complete(plain, p, n)["content"].get<std::string>());
  std::vector<std::future<Json>> results;
  for (const std::string& p : prompts()) {
    results.push_back(std::async(std::launch::async, [&srv, p, n] { return complete(srv, p, n); }));
  }
  for (size_t i = 0; i < prompts().size(); ++i) {
    const Json r = results[i].get();
    EXPECT_EQ(r["content"].get<std::string>(), alone[i]) << "prompt " << i;
  }
}

TEST(ServerSpeculative, NgramLookupGivesTheSameGreedyText) {
  ServerConfig cfg;
  cfg.parallel = 4;
  FERRITE_TEST_SERVER(plain, cfg);
  cfg.engine = [](EngineOptions& o) {
    o.speculative = {.n_max = 8};
    o.make_drafter = [](int, int64_t, int64_t) {
      return std::make_unique<runtime::NgramDrafter>(runtime::NgramParams{.size_n = 3, .size_m = 8});
    };
  };
  FERRITE_TEST_SERVER(srv, cfg);
  expect_same_text(srv, plain, 150);
  const Json r = complete(srv, prompts()[1], 150);
  ASSERT_TRUE(r["timings"].contains("draft_n")) << r.dump();
  EXPECT_GT(r["timings"]["draft_n"].get<int>(), 0);
  EXPECT_GT(r["timings"]["draft_n_accepted"].get<int>(), 0);
  EXPECT_GT(srv.engine().stats().draft_accepted_tokens, 0u);
  auto metrics = srv.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("ferrite:draft_tokens_accepted_total"), std::string::npos);
}

TEST(ServerSpeculative, TargetAsItsOwnDraftIsAcceptedEverywhere) {
  FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
  auto draft_model = model::Model::load(stories.string());
  auto draft_ctx = std::make_shared<runtime::Context>(draft_model, runtime::ContextParams{.n_ctx = 1024, .n_threads = 1});
  ServerConfig cfg;
  cfg.parallel = 2;
  FERRITE_TEST_SERVER(plain, cfg);
  cfg.engine = [draft_ctx](EngineOptions& o) {
    o.speculative = {.n_max = 6};
    o.make_drafter = [draft_ctx](int slot, int64_t slot_ctx, int64_t) {
      return std::make_unique<runtime::ModelDrafter>(
          *draft_ctx, runtime::DraftModelParams{.p_min = 0.0f, .seq = slot, .n_cells = slot_ctx});
    };
  };
  FERRITE_TEST_SERVER(srv, cfg);
  expect_same_text(srv, plain, 100);
  const EngineStats s = srv.engine().stats();
  EXPECT_GT(s.drafted_tokens, 100u);
  EXPECT_EQ(s.draft_accepted_tokens, s.drafted_tokens);
}

}  // namespace
}  // namespace ferrite::server::test
