#include "chat/tool_calls.h"

#include <nlohmann/json.hpp>

namespace ferrite::chat {
namespace {

using nlohmann::json;

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// {"name": str, "arguments"|"parameters": object|string} -> a call.
bool call_from_json(const json& j, ToolCall& out) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  const json* args = nullptr;
  if (j.contains("arguments")) args = &j["arguments"];
  else if (j.contains("parameters")) args = &j["parameters"];
  out.name = j["name"].get<std::string>();
  if (!args || args->is_null()) {
    out.arguments = "{}";
  } else if (args->is_string()) {
    out.arguments = args->get<std::string>();
  } else {
    out.arguments = args->dump();
  }
  return true;
}

bool parse_hermes(const std::string& text, ParsedReply& out) {
  static const std::string kOpen = "<tool_call>", kClose = "</tool_call>";
  if (text.find(kOpen) == std::string::npos) return false;
  std::string content;
  size_t at = 0;
  while (true) {
    const size_t open = text.find(kOpen, at);
    if (open == std::string::npos) break;
    content += text.substr(at, open - at);
    const size_t body = open + kOpen.size();
    size_t close = text.find(kClose, body);
    const size_t end = close == std::string::npos ? text.size() : close;
    const json j = json::parse(text.substr(body, end - body), nullptr, false);
    ToolCall call;
    if (j.is_discarded() || !call_from_json(j, call)) return false;
    out.calls.push_back(std::move(call));
    at = close == std::string::npos ? text.size() : close + kClose.size();
  }
  content += text.substr(std::min(at, text.size()));
  out.content = trim(content);
  return !out.calls.empty();
}

bool parse_mistral(const std::string& text, ParsedReply& out) {
  static const std::string kTag = "[TOOL_CALLS]";
  const size_t tag = text.find(kTag);
  if (tag == std::string::npos) return false;
  const json j = json::parse(trim(text.substr(tag + kTag.size())), nullptr, false);
  if (j.is_discarded()) return false;
  const json list = j.is_array() ? j : json::array({j});
  for (const json& item : list) {
    ToolCall call;
    if (!call_from_json(item, call)) return false;
    out.calls.push_back(std::move(call));
  }
  out.content = trim(text.substr(0, tag));
  return !out.calls.empty();
}

bool parse_llama3(const std::string& text, ParsedReply& out) {
  static const std::string kPythonTag = "<|python_tag|>";
  std::string body = trim(text);
  if (body.rfind(kPythonTag, 0) == 0) body = trim(body.substr(kPythonTag.size()));
  if (body.empty() || body.front() != '{') return false;
  const json j = json::parse(body, nullptr, false);
  ToolCall call;
  if (j.is_discarded() || !(j.contains("parameters") || j.contains("arguments")) || !call_from_json(j, call)) {
    return false;
  }
  out.calls.push_back(std::move(call));
  out.content.clear();
  return true;
}

}  // namespace

ParsedReply parse_tool_calls(const std::string& text) {
  ParsedReply r;
  if (parse_hermes(text, r)) return r;
  r = {};
  if (parse_mistral(text, r)) return r;
  r = {};
  if (parse_llama3(text, r)) return r;
  return {text, {}};
}

}  // namespace ferrite::chat
