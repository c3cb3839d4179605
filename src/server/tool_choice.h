// tool_choice of a chat request: "none" and "auto" leave the reply free;
// "required" and {"type": "function", "function": {"name": N}} force a call.
// A forced call is generated under a grammar: the reply is one JSON object
//   {"name": <an offered tool's name>, "arguments": <its parameters schema>}
// which chat::parse_tool_calls() reads back (the Llama 3 whole-reply form), so any
// model, trained for tools or not, answers with a well-formed call.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace ferrite::server {

struct ToolChoice {
  bool none = false;       // "none": tools are neither shown nor parsed
  bool forced = false;     // "required" or a named function
  std::string function;    // the named function ("" for "required" / "auto")
};

// Reads and checks body["tools"]: null when absent, null or empty, else the
// array, each element {"type": "function", "function": {"name": <string>, ...}}.
// Throws ApiError 400 otherwise. The functions below take its result.
nlohmann::ordered_json parse_tools(const nlohmann::ordered_json& body);

// Reads body["tool_choice"] (absent or null: auto). `tools` is the validated
// tools array (null when none were offered). Throws ApiError 400 for a bad
// value, a named function that is not offered, or a forced call without tools.
ToolChoice parse_tool_choice(const nlohmann::ordered_json& body, const nlohmann::ordered_json& tools);

// The JSON schema of a forced call among `tools` (only `function` when named).
nlohmann::ordered_json forced_call_schema(const nlohmann::ordered_json& tools, const std::string& function);

// The GBNF of that schema with whitespace between JSON tokens cut to at most
// one space, so a sampled call cannot spend its tokens on indentation.
// Throws InvalidArgument for parameters outside the JSON schema subset.
std::string forced_call_gbnf(const nlohmann::ordered_json& tools, const std::string& function);

}  // namespace ferrite::server
