// Pieces of the server that need no model: stop strings, tool-call parsing,
// log-probabilities, prefix matching.
#include <cmath>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/logprobs.h"
#include "server/slot.h"
#include "server/stop_strings.h"
#include "server/api_error.h"
#include "server/tool_calls.h"
#include "server/tool_choice.h"

namespace ferrite::server {
namespace {

TEST(StopStrings, CutsAtStopSplitAcrossPieces) {
  StopStrings s({"<end>"});
  std::string out = s.push("Hello <e");
  EXPECT_EQ(out, "Hello ");  // "<e" may start the stop string
  out += s.push("n");
  EXPECT_FALSE(s.stopped());
  out += s.push("d> tail");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.matched(), "<end>");
  EXPECT_EQ(out, "Hello ");
  EXPECT_EQ(s.flush(), "");
}

TEST(StopStrings, ReleasesHeldTextThatIsNotAStop) {
  StopStrings s({"abc"});
  EXPECT_EQ(s.push("xab"), "x");
  EXPECT_EQ(s.push("x"), "abx");
  EXPECT_EQ(s.push("ab"), "");
  EXPECT_EQ(s.flush(), "ab");
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, EarliestOfSeveralWins) {
  StopStrings s({"world", "lo"});
  EXPECT_EQ(s.push("hello world"), "hel");
  EXPECT_EQ(s.matched(), "lo");
}

TEST(ToolCalls, HermesFormat) {
  const ParsedReply r = parse_tool_calls(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json({{"city", "Paris"}}));
  EXPECT_EQ(r.content, "Let me check.");
}

TEST(ToolCalls, HermesSeveralCalls) {
  const ParsedReply r = parse_tool_calls(
      "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", \"arguments\": {\"x\": 1}}</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "a");
  EXPECT_EQ(r.calls[1].name, "b");
  EXPECT_EQ(r.content, "");
}

TEST(ToolCalls, Llama3Json) {
  const ParsedReply r =
      parse_tool_calls("<|python_tag|>{\"name\": \"search\", \"parameters\": {\"query\": \"ferrite\"}}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "search");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json({{"query", "ferrite"}}));
}

TEST(ToolCalls, MistralList) {
  const ParsedReply r = parse_tool_calls(
      "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, {\"name\": \"neg\", \"arguments\": {\"a\": 3}}]");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "neg");
  EXPECT_EQ(nlohmann::json::parse(r.calls[0].arguments), nlohmann::json({{"a", 1}, {"b", 2}}));
}

TEST(ToolCalls, PlainTextAndBrokenCallsStayContent) {
  EXPECT_TRUE(parse_tool_calls("Just an answer.").calls.empty());
  EXPECT_TRUE(parse_tool_calls("<tool_call>{not json</tool_call>").calls.empty());
  EXPECT_TRUE(parse_tool_calls("{\"answer\": 42}").calls.empty());  // JSON, but no name/parameters
  EXPECT_EQ(parse_tool_calls("<tool_call>{broken").content, "<tool_call>{broken");
}

TEST(ToolsField, MalformedToolsAre400NamingTools) {
  using Json = nlohmann::ordered_json;
  const Json ok = {{"type", "function"}, {"function", {{"name", "f"}}}};
  EXPECT_TRUE(parse_tools(Json::object()).is_null());
  EXPECT_TRUE(parse_tools(Json{{"tools", nullptr}}).is_null());
  EXPECT_TRUE(parse_tools(Json{{"tools", Json::array()}}).is_null());
  EXPECT_EQ(parse_tools(Json{{"tools", {ok}}}).size(), 1u);
  // forced_call_gbnf and the template read tools[i].function.name unchecked: these must stop here.
  const Json bad[] = {Json{{"tools", "f"}}, Json{{"tools", {1}}}, Json{{"tools", {Json::object()}}},
                      Json{{"tools", {{{"function", "f"}}}}}, Json{{"tools", {{{"function", {{"name", 3}}}}}}}};
  for (const Json& body : bad) {
    try {
      (void)parse_tools(body);
      ADD_FAILURE() << "accepted " << body.dump();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.param(), "tools");
    }
  }
}

TEST(Logprobs, MatchesLogSoftmaxDefinition) {
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f};
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  std::vector<std::pair<int32_t, float>> top;
  const float lp = token_logprob(logits, 0, &top, 3);
  EXPECT_NEAR(lp, 1.0 - std::log(z), 1e-6);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 1);  // equal logits: lower id first
  EXPECT_EQ(top[1].first, 3);
  EXPECT_EQ(top[2].first, 0);
  EXPECT_NEAR(top[0].second, 3.0 - std::log(z), 1e-6);
}

TEST(Slots, CommonPrefix) {
  EXPECT_EQ(common_prefix({1, 2, 3}, {1, 2, 4, 5}), 2u);
  EXPECT_EQ(common_prefix({}, {1}), 0u);
  EXPECT_EQ(common_prefix({7, 8}, {7, 8}), 2u);
}

}  // namespace
}  // namespace ferrite::server
