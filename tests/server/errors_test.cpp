// Error statuses in OpenAI's shape, authentication and request limits.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

const ServerConfig kDefaultConfig{};

void expect_error(const std::pair<int, Json>& r, int status, const std::string& param = {}) {
  EXPECT_EQ(r.first, status) << r.second.dump();
  ASSERT_TRUE(r.second.is_object()) << "status " << r.first;
  ASSERT_TRUE(r.second.contains("error"));
  EXPECT_TRUE(r.second["error"]["message"].is_string());
  EXPECT_TRUE(r.second["error"]["type"].is_string());
  if (!param.empty()) {
    EXPECT_EQ(r.second["error"]["param"], param);
  }
}

TEST(ServerErrors, MalformedAndMistypedRequests) {
  FERRITE_TEST_SERVER(srv, kDefaultConfig);
  httplib::Client c = srv.client();
  auto bad = c.Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_TRUE(Json::parse(bad->body).contains("error"));

  const Json msgs = {{{"role", "user"}, {"content", "hi"}}};
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"temperature", "hot"}}), 400, "temperature");
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"temperature", 5}}), 400, "temperature");
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"max_tokens", -3}}), 400, "max_tokens");
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"n", 1000}}), 400, "n");
  expect_error(srv.post("/v1/chat/completions", {{"messages", "hi"}}), 400, "messages");
  expect_error(srv.post("/v1/chat/completions", {{"messages", {{{"content", "no role"}}}}}), 400);
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"logit_bias", {{"99999", 1}}}}), 400, "logit_bias");
  expect_error(srv.post("/v1/chat/completions", {{"messages", msgs}, {"stop", 3}}), 400, "stop");
  expect_error(srv.post("/v1/completions", {{"prompt", {1, -5}}}), 400, "prompt");
  expect_error(srv.post("/v1/completions", {{"max_tokens", 3}}), 400, "prompt");
  expect_error(srv.post("/completion", {{"prompt", "x"}, {"grammar", "root ::= ("}}), 400);
  expect_error(srv.post("/v1/chat/completions",
                        {{"messages", msgs}, {"response_format", {{"type", "json_schema"}, {"json_schema", 3}}}}),
               400, "response_format");
}

TEST(ServerErrors, AnyModelNameUnlessStrict) {
  const Json req = {{"model", "gpt-9"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"max_tokens", 2}};
  {
    // One model is served: llama-server's clients name any model.
    FERRITE_TEST_SERVER(srv, kDefaultConfig);
    EXPECT_EQ(srv.post("/v1/chat/completions", req).first, 200);
  }
  ServerConfig strict;
  strict.server = [](ServerOptions& o) { o.strict_model = true; };
  FERRITE_TEST_SERVER(srv, strict);
  auto r = srv.post("/v1/chat/completions", req);
  expect_error(r, 404, "model");
  EXPECT_EQ(r.second["error"]["code"], "model_not_found");
  Json same = req;
  same["model"] = "stories260K";
  EXPECT_EQ(srv.post("/v1/chat/completions", same).first, 200);
}

TEST(ServerErrors, UnknownRoute) {
  FERRITE_TEST_SERVER(srv, kDefaultConfig);
  auto nf = srv.get("/v1/nothing-here");
  EXPECT_EQ(nf.first, 404);
  EXPECT_TRUE(nf.second.contains("error"));
}

TEST(ServerErrors, ContextOverflowAndTooManyTokens) {
  FERRITE_TEST_SERVER(srv, kDefaultConfig);  // 512 tokens per slot
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += "Once upon a time ";
  auto r = srv.post("/v1/completions", {{"prompt", long_prompt}, {"max_tokens", 4}});
  expect_error(r, 400);
  EXPECT_EQ(r.second["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(r.second["error"]["param"], "prompt");
  EXPECT_NE(r.second["error"]["message"].get<std::string>().find("512"), std::string::npos);

  // Without context shift, more tokens than the slot holds are refused.
  ServerConfig fixed = kDefaultConfig;
  fixed.context_shift = false;
  FERRITE_TEST_SERVER(no_shift, fixed);
  auto big = no_shift.post("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 100000}});
  expect_error(big, 400, "max_tokens");
  EXPECT_EQ(big.second["error"]["code"], "context_length_exceeded");
}

TEST(ServerErrors, BodyTooLarge) {
  FERRITE_TEST_SERVER(srv, kDefaultConfig);  // 1 MiB limit
  httplib::Client c = srv.client();
  const std::string body = "{\"prompt\": \"" + std::string(2u << 20, 'a') + "\"}";
  auto r = c.Post("/v1/completions", body, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // The server still serves others.
  EXPECT_EQ(srv.get("/health").first, 200);
}

TEST(ServerErrors, ApiKeyRequiredExceptForHealth) {
  ServerConfig cfg;
  cfg.api_key = "sekrit";
  FERRITE_TEST_SERVER(srv, cfg);
  const Json req = {{"prompt", ""}, {"max_tokens", 2}};
  auto none = srv.post("/v1/completions", req);
  expect_error(none, 401);
  EXPECT_EQ(none.second["error"]["code"], "invalid_api_key");
  expect_error(srv.post("/v1/completions", req, "wrong"), 401);
  expect_error(srv.get("/v1/models"), 401);
  EXPECT_EQ(srv.post("/v1/completions", req, "sekrit").first, 200);
  EXPECT_EQ(srv.get("/v1/models", "sekrit").first, 200);
  EXPECT_EQ(srv.get("/health").first, 200);
}

}  // namespace
}  // namespace ferrite::server::test
