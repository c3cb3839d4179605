// Tool calls parsed out of a model's text, for the formats models are trained
// to emit:
//   Hermes / Qwen:  <tool_call>{"name": ..., "arguments": {...}}</tool_call> (repeatable)
//   Llama 3.x:      the whole reply is {"name": ..., "parameters": {...}}
//                   (optionally after <|python_tag|>; "arguments" also accepted)
//   Mistral:        [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
#pragma once

#include <string>
#include <vector>

namespace ferrite::chat {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

struct ParsedReply {
  std::string content;           // the text that is not a tool call (trimmed)
  std::vector<ToolCall> calls;   // empty: a plain reply
};

// A reply that holds no well-formed call comes back as content unchanged.
ParsedReply parse_tool_calls(const std::string& text);

}  // namespace ferrite::chat
