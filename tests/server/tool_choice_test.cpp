// tool_choice "required" / a named function: the reply is a call to an
// offered tool whose arguments satisfy its parameters schema, whatever the
// model (stories260K was never trained on tools).
#include <gtest/gtest.h>

#include "server_fixture.h"

namespace ferrite::server::test {
namespace {

const ServerConfig kDefault{};

Json weather_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_weather"},
            {"description", "Weather of a city"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"city", {{"type", "string"}, {"enum", {"Paris", "Oslo"}}}}}},
              {"required", {"city"}},
              {"additionalProperties", false}}}}}};
}

Json time_tool() {
  return {{"type", "function"},
          {"function",
           {{"name", "get_time"},
            {"parameters",
             {{"type", "object"},
              {"properties", {{"utc", {{"type", "boolean"}}}}},
              {"required", {"utc"}},
              {"additionalProperties", false}}}}}};
}

Json chat_request(const Json& tool_choice, int seed) {
  return {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
          {"tools", {weather_tool(), time_tool()}},
          {"tool_choice", tool_choice},
          {"max_tokens", 60},
          {"temperature", 1.0},
          {"seed", seed}};
}

TEST(ServerToolChoice, RequiredYieldsAWellFormedCall) {
  FERRITE_TEST_SERVER(srv, kDefault);
  for (int seed = 0; seed < 3; ++seed) {
    auto [status, body] = srv.post("/v1/chat/completions", chat_request("required", seed));
    ASSERT_EQ(status, 200) << body.dump();
    const Json& choice = body["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << body.dump();
    ASSERT_TRUE(choice["message"].contains("tool_calls")) << body.dump();
    const Json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    const std::string name = call["function"]["name"];
    const Json args = Json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
    ASSERT_TRUE(args.is_object()) << call.dump();
    if (name == "get_weather") {
      EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo") << args.dump();
    } else {
      EXPECT_EQ(name, "get_time");
      EXPECT_TRUE(args["utc"].is_boolean()) << args.dump();
    }
  }
}

TEST(ServerToolChoice, NamedFunctionIsTheOneCalledAlsoStreamed) {
  FERRITE_TEST_SERVER(srv, kDefault);
  const Json named = {{"type", "function"}, {"function", {{"name", "get_time"}}}};
  auto [status, body] = srv.post("/v1/chat/completions", chat_request(named, 5));
  ASSERT_EQ(status, 200) << body.dump();
  const Json& call = body["choices"][0]["message"]["tool_calls"][0];
  EXPECT_EQ(call["function"]["name"], "get_time");
  EXPECT_TRUE(Json::parse(call["function"]["arguments"].get<std::string>())["utc"].is_boolean());

  Json req = chat_request(named, 5);
  req["stream"] = true;
  const auto events = srv.stream("/v1/chat/completions", req);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string finish, streamed_name;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const Json j = Json::parse(events[i]);
    const Json& d = j["choices"][0]["delta"];
    if (d.contains("tool_calls")) streamed_name = d["tool_calls"][0]["function"]["name"];
    if (!j["choices"][0]["finish_reason"].is_null()) finish = j["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(streamed_name, "get_time");
  EXPECT_EQ(finish, "tool_calls");
}

TEST(ServerToolChoice, BadChoicesAre400) {
  FERRITE_TEST_SERVER(srv, kDefault);
  const Json unknown = {{"type", "function"}, {"function", {{"name", "launch"}}}};
  auto [s1, b1] = srv.post("/v1/chat/completions", chat_request(unknown, 0));
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(b1["error"]["param"], "tool_choice");
  Json no_tools = chat_request("required", 0);
  no_tools.erase("tools");
  auto [s2, b2] = srv.post("/v1/chat/completions", no_tools);
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(b2["error"]["param"], "tool_choice");
  auto [s3, b3] = srv.post("/v1/chat/completions", chat_request("sometimes", 0));
  EXPECT_EQ(s3, 400);
  // tool_choice none: no call is parsed, the text is content.
  auto [s4, b4] = srv.post("/v1/chat/completions", chat_request("none", 0));
  ASSERT_EQ(s4, 200) << b4.dump();
  EXPECT_FALSE(b4["choices"][0]["message"].contains("tool_calls"));
}

}  // namespace
}  // namespace ferrite::server::test
