// Every sampler is reachable over HTTP (the one table of sampling/param_table.h):
// each parameter, set away from its default, changes what stories260K
// writes for the same prompt and seed. Penalties and DRY are checked against
// greedy decoding (whose text repeats itself), the random stages at
// temperature 1 with a fixed seed. Also: the server's completion endpoints
// continue their prompt byte for byte (echo), and a slot goes on past its
// context by shifting.
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

std::string text_of(const TestServer& srv, const Json& body) {
  auto [status, j] = srv.post("/v1/completions", body);
  EXPECT_EQ(status, 200) << j.dump();
  return status == 200 ? j["choices"][0]["text"].get<std::string>() : "";
}

Json base(double temperature) {
  return {{"prompt", "Once upon a time"}, {"max_tokens", 60}, {"temperature", temperature}, {"seed", 42},
          {"ignore_eos", true}};
}

struct Change {
  const char* name;
  double temperature;  // of the baseline the change is compared with
  Json fields;
};

TEST(ServerSamplers, EachParameterChangesTheOutput) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  const std::string greedy = text_of(srv, base(0));
  const std::string sampled = text_of(srv, base(1.0));
  ASSERT_GE(greedy.size(), 60u);
  ASSERT_GE(sampled.size(), 60u);
  ASSERT_NE(greedy, sampled);
  const Change changes[] = {
      {"seed", 1.0, {{"seed", 43}}},
      {"top_k", 1.0, {{"top_k", 1}}},
      {"top_p", 1.0, {{"top_p", 0.2}}},
      {"min_p", 1.0, {{"min_p", 0.5}}},
      {"typical_p", 1.0, {{"typical_p", 0.3}}},
      {"top_n_sigma", 1.0, {{"top_n_sigma", 0.5}}},
      {"xtc", 1.0, {{"xtc_probability", 1.0}, {"xtc_threshold", 0.05}}},
      {"mirostat", 1.0, {{"mirostat", 2}, {"mirostat_tau", 2.0}}},
      {"mirostat_v1", 1.0, {{"mirostat", 1}}},
      {"dynatemp", 1.0, {{"dynatemp_range", 0.9}}},
      {"samplers", 1.0, {{"samplers", Json::array({"temperature", "top_k"})}, {"top_k", 2}}},
      {"logit_bias", 0.0, {{"logit_bias", {{"261", -100}}}}},  // bans a token of the greedy text
      {"repeat_penalty", 0.0, {{"repeat_penalty", 1.5}}},
      {"presence_penalty", 0.0, {{"presence_penalty", 1.5}}},
      {"frequency_penalty", 0.0, {{"frequency_penalty", 1.5}}},
      {"dry", 0.0, {{"dry_multiplier", 2.0}, {"dry_allowed_length", 1}}},
  };
  for (const Change& c : changes) {
    SCOPED_TRACE(c.name);
    Json body = base(c.temperature);
    for (const auto& [k, v] : c.fields.items()) body[k] = v;
    const std::string got = text_of(srv, body);
    EXPECT_FALSE(got.empty());
    EXPECT_NE(got, c.temperature == 0 ? greedy : sampled);
  }
}

TEST(ServerSamplers, OutOfRangeValuesAre400NamingTheField) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  for (const auto& [field, value] : std::vector<std::pair<std::string, Json>>{
           {"mirostat", 3}, {"dry_base", 0.5}, {"xtc_probability", 2}, {"typical_p", -1},
           {"dry_sequence_breakers", 5}, {"samplers", Json::array({"nonsense"})}, {"top_k", 0.5}}) {
    SCOPED_TRACE(field);
    Json body = base(1.0);
    body[field] = value;
    auto [status, j] = srv.post("/v1/completions", body);
    EXPECT_EQ(status, 400) << j.dump();
    EXPECT_EQ(j["error"]["param"], field) << j.dump();
  }
}

// The completion endpoints continue the prompt: echo gives prompt +
// continuation, byte for byte the golden greedy text (the space before
// "time" is the continuation's).
TEST(ServerEcho, CompletionsContinueThePromptByteForByte) {
  FERRITE_TEST_SERVER(srv, ServerConfig{});
  const std::string golden = golden_greedy_text();
  const std::string prompt = "Once upon a";
  const Json req = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}};
  Json echo = req;
  echo["echo"] = true;
  const std::string e = text_of(srv, echo);
  ASSERT_GT(e.size(), prompt.size() + 5);
  EXPECT_EQ(e, golden.substr(0, e.size()));
  EXPECT_EQ(prompt + text_of(srv, req), e);
  // Streamed, the same bytes.
  Json stream = echo;
  stream["stream"] = true;
  std::string streamed;
  for (const std::string& ev : srv.stream("/v1/completions", stream)) {
    if (ev == "[DONE]") break;
    const Json j = Json::parse(ev);
    if (!j["choices"].empty()) streamed += j["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(streamed, e);
  // llama.cpp's /completion: the content continues the prompt.
  auto [status, native] = srv.post("/completion", {{"prompt", prompt}, {"n_predict", 12}, {"temperature", 0}});
  ASSERT_EQ(status, 200) << native.dump();
  EXPECT_EQ(prompt + native["content"].get<std::string>(), e);
}

// A slot of 64 cells answers 150 tokens: the oldest half after n_keep goes
// whenever it is full (context shift), and the text stays the model's.
TEST(ServerContextShift, SlotGoesOnPastItsContext) {
  ServerConfig cfg;
  cfg.parallel = 1;
  cfg.n_ctx = 64;
  FERRITE_TEST_SERVER(srv, cfg);
  auto [status, j] = srv.post("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 150},
                                                  {"temperature", 0}, {"ignore_eos", true}, {"n_keep", 4}});
  ASSERT_EQ(status, 200) << j.dump();
  EXPECT_EQ(j["usage"]["completion_tokens"], 150);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_GE(j["choices"][0]["text"].get<std::string>().size(), 150u);
  // The first 40 tokens or so are made before any shift: the golden's.
  const std::string text = j["choices"][0]["text"];
  const std::string plain = text_of(srv, {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}});
  EXPECT_EQ(text.compare(0, plain.size(), plain), 0);
  // Without max_tokens the answer ends where the slot is full.
  auto [s2, j2] = srv.post("/v1/completions", {{"prompt", "Once upon a time"}, {"temperature", 0}, {"ignore_eos", true}});
  ASSERT_EQ(s2, 200);
  EXPECT_EQ(j2["choices"][0]["finish_reason"], "length");
  EXPECT_LE(j2["usage"]["completion_tokens"].get<int>(), 64);
}

}  // namespace
}  // namespace ferrite::server::test
