// Rendering a conversation with a chat template, as Hugging Face's
// tokenizer.apply_chat_template(messages, tools=..., add_generation_prompt=...)
// does, and the named fallback templates for models that carry none.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/template.h"

namespace ferrite::chat {

struct ChatOptions {
  Json tools;                         // array of tool schemas, or null (the template sees None)
  bool add_generation_prompt = false;
  std::string bos_token;
  std::string eos_token;
  Json extra = Json::object();        // more template variables (enable_thinking, ...)
  RenderOptions render;
};

// Template variables: messages, tools, documents (None), add_generation_prompt,
// bos_token, eos_token, then `extra` (which may override them).
Json chat_context(const Json& messages, const ChatOptions& options);

std::string apply_chat_template(const Template& tmpl, const Json& messages, const ChatOptions& options);
std::string apply_chat_template(const std::string& template_source, const Json& messages,
                                const ChatOptions& options);

// Built-in templates, written for ferrite, selectable by name: chatml,
// llama2, llama3, mistral, gemma, phi3, zephyr, vicuna. nullptr if unknown.
const char* builtin_template(std::string_view name);
std::vector<std::string> builtin_template_names();

// `--chat-template NAME|FILE`: a built-in name, else the contents of a file
// (a Jinja source, or a tokenizer_config.json whose chat_template is used).
// Throws InvalidArgument (unknown name, no such file) or IoError.
std::string load_chat_template(const std::string& name_or_file);

}  // namespace ferrite::chat
