// Tool calls parsed out of a reply, for the formats models emit.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/tool_calls.h"

namespace ferrite::chat {
namespace {

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

}  // namespace
}  // namespace ferrite::chat
