#include "runtime/chat_format.h"

#include "chat/error.h"
#include "core/error.h"

namespace ferrite::runtime {
namespace {

std::string token_text(const gguf::File& file, const char* key) {
  const gguf::Value* id = file.find(key);
  const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
  if (!id || !tokens || !tokens->is_array() || !id->is_integer()) return "";
  const int64_t i = id->as_int();
  if (i < 0 || i >= static_cast<int64_t>(tokens->items().size())) return "";
  const gguf::Value& t = tokens->items()[static_cast<size_t>(i)];
  return t.is_string() ? t.as_string() : "";
}

// Content as a template sees it: a string (text parts joined) or null.
chat::Json normalize_content(const chat::Json& content, const std::string& where) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) throw InvalidField(where, where + ".content must be a string, an array of parts or null");
  std::string text;
  for (const chat::Json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      throw InvalidField(where, where + ".content parts must be objects with a \"type\"");
    }
    if (part["type"] != "text") {
      throw InvalidField(where, "content part type '" + part["type"].get<std::string>() + "' is not supported");
    }
    if (!part.contains("text") || !part["text"].is_string()) throw InvalidField(where, where + ": text part without text");
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

chat::Json normalize_messages(const chat::Json& messages) {
  if (!messages.is_array()) throw InvalidField("messages", "'messages' must be an array");
  if (messages.empty()) throw InvalidField("messages", "'messages' must not be empty");
  chat::Json out = chat::Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = "messages[" + std::to_string(i) + "]";
    const chat::Json& m = messages[i];
    if (!m.is_object()) throw InvalidField(where, where + " must be an object");
    if (!m.contains("role") || !m["role"].is_string()) throw InvalidField(where, where + ".role must be a string");
    chat::Json n = m;
    n["content"] = normalize_content(m.contains("content") ? m["content"] : chat::Json(nullptr), where);
    if (m.contains("tool_calls")) {
      if (!m["tool_calls"].is_array()) throw InvalidField(where, where + ".tool_calls must be an array");
      for (chat::Json& call : n["tool_calls"]) {
        // Templates index arguments as a mapping; OpenAI sends a JSON string.
        if (call.is_object() && call.contains("function") && call["function"].is_object() &&
            call["function"].contains("arguments") && call["function"]["arguments"].is_string()) {
          chat::Json args = chat::Json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
          if (!args.is_discarded()) call["function"]["arguments"] = args;
        }
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

ChatFormatter::ChatFormatter(const gguf::File& file, const std::string& override_name, const std::string& fallback) {
  bos_ = token_text(file, "tokenizer.ggml.bos_token_id");
  eos_ = token_text(file, "tokenizer.ggml.eos_token_id");
  if (!override_name.empty()) {
    source_ = chat::load_chat_template(override_name);
    origin_ = override_name;
  } else if (const gguf::Value* t = file.find("tokenizer.chat_template"); t && t->is_string()) {
    source_ = t->as_string();
    origin_ = "model";
  } else {
    source_ = chat::load_chat_template(fallback);
    origin_ = fallback;
  }
  template_ = std::make_shared<const chat::Template>(chat::Template::parse(source_));
}

std::string ChatFormatter::render(const chat::Json& messages, const chat::Json& tools,
                                  bool add_generation_prompt) const {
  chat::ChatOptions opt;
  opt.tools = tools;
  opt.add_generation_prompt = add_generation_prompt;
  opt.bos_token = bos_;
  opt.eos_token = eos_;
  try {
    return chat::apply_chat_template(*template_, normalize_messages(messages), opt);
  } catch (const chat::TemplateError& e) {
    throw InvalidField("messages", std::string("the chat template rejected the messages: ") + e.what());
  }
}

}  // namespace ferrite::runtime
