#include "server/tool_choice.h"

#include <sstream>

#include "grammar/json_schema.h"
#include "server/api_error.h"

namespace ferrite::server {
namespace {

using Json = nlohmann::ordered_json;

bool offers(const Json& tools, const std::string& name) {
  if (!tools.is_array()) return false;
  for (const Json& t : tools) {
    if (t["function"]["name"] == name) return true;
  }
  return false;
}

// {"name": const, "arguments": parameters} for one tool.
Json call_schema(const Json& function) {
  Json params = Json{{"type", "object"}};
  if (function.contains("parameters") && function["parameters"].is_object()) params = function["parameters"];
  return Json{{"type", "object"},
              {"properties", {{"name", {{"const", function["name"]}}}, {"arguments", params}}},
              {"required", {"name", "arguments"}},
              {"additionalProperties", false}};
}

}  // namespace

Json parse_tools(const Json& body) {
  if (!body.contains("tools") || body["tools"].is_null()) return nullptr;
  const Json& tools = body["tools"];
  if (!tools.is_array()) throw bad_request("'tools' must be an array", "tools");
  for (const Json& t : tools) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string()) {
      throw bad_request("each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}", "tools");
    }
  }
  return tools.empty() ? Json(nullptr) : tools;
}

ToolChoice parse_tool_choice(const Json& body, const Json& tools) {
  ToolChoice c;
  if (!body.contains("tool_choice") || body["tool_choice"].is_null()) return c;
  const Json& tc = body["tool_choice"];
  if (tc.is_string()) {
    const std::string v = tc;
    if (v == "none") c.none = true;
    else if (v == "required") c.forced = true;
    else if (v != "auto") throw bad_request("'tool_choice' must be none, auto, required or an object", "tool_choice");
  } else if (tc.is_object()) {
    if (!tc.contains("function") || !tc["function"].is_object() || !tc["function"].contains("name") ||
        !tc["function"]["name"].is_string()) {
      throw bad_request("'tool_choice' object must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
                        "tool_choice");
    }
    c.forced = true;
    c.function = tc["function"]["name"];
    if (!offers(tools, c.function)) {
      throw bad_request("'tool_choice' names the function '" + c.function + "', which is not in 'tools'",
                        "tool_choice");
    }
  } else {
    throw bad_request("'tool_choice' must be a string or an object", "tool_choice");
  }
  if (c.forced && (!tools.is_array() || tools.empty())) {
    throw bad_request("'tool_choice' requires a call but no 'tools' were given", "tool_choice");
  }
  return c;
}

Json forced_call_schema(const Json& tools, const std::string& function) {
  Json options = Json::array();
  for (const Json& t : tools) {
    if (function.empty() || t["function"]["name"] == function) options.push_back(call_schema(t["function"]));
  }
  if (options.size() == 1) return options[0];
  return Json{{"anyOf", options}};
}

std::string forced_call_gbnf(const Json& tools, const std::string& function, const grammar::SchemaLimits& limits) {
  // The whitespace rule of grammar::json_schema_to_gbnf (see json_schema.h).
  static const std::string kWsRule = "ws ::= ";
  std::istringstream in(grammar::json_schema_to_gbnf(forced_call_schema(tools, function), limits));
  std::string out, line;
  while (std::getline(in, line)) {
    out += line.rfind(kWsRule, 0) == 0 ? kWsRule + "| \" \"" : line;
    out += '\n';
  }
  return out;
}

}  // namespace ferrite::server
