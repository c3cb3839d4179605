// Pieces of the server that need no model: the tools field, prefix matching.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/slot.h"
#include "server/tool_choice.h"

namespace ferrite::server {
namespace {

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

TEST(Slots, CommonPrefix) {
  EXPECT_EQ(common_prefix({1, 2, 3}, {1, 2, 4, 5}), 2u);
  EXPECT_EQ(common_prefix({}, {1}), 0u);
  EXPECT_EQ(common_prefix({7, 8}, {7, 8}), 2u);
}

}  // namespace
}  // namespace ferrite::server
