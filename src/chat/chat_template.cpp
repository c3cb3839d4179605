#include "chat/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ferrite::chat {
namespace {
// A chat template file larger than this is refused (real ones are < 64 KiB).
constexpr uintmax_t kMaxTemplateFileBytes = 1u << 20;
}  // namespace

Json chat_context(const Json& messages, const ChatOptions& options) {
  if (!messages.is_array()) throw InvalidArgument("chat messages must be a JSON array");
  if (!options.tools.is_null() && !options.tools.is_array()) throw InvalidArgument("chat tools must be a JSON array");
  if (!options.extra.is_object()) throw InvalidArgument("extra chat template variables must be a JSON object");
  Json ctx = Json::object();
  ctx["messages"] = messages;
  ctx["tools"] = options.tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = options.add_generation_prompt;
  ctx["bos_token"] = options.bos_token;
  ctx["eos_token"] = options.eos_token;
  for (auto it = options.extra.begin(); it != options.extra.end(); ++it) ctx[it.key()] = it.value();
  return ctx;
}

std::string apply_chat_template(const Template& tmpl, const Json& messages, const ChatOptions& options) {
  return tmpl.render(chat_context(messages, options), options.render);
}

std::string apply_chat_template(const std::string& template_source, const Json& messages,
                                const ChatOptions& options) {
  return apply_chat_template(Template::parse(template_source), messages, options);
}

std::string load_chat_template(const std::string& name_or_file) {
  if (const char* src = builtin_template(name_or_file)) return src;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(name_or_file, ec)) {
    std::string names;
    for (const auto& n : builtin_template_names()) names += (names.empty() ? "" : ", ") + n;
    throw InvalidArgument("chat template '" + name_or_file + "' is neither a built-in name (" + names +
                          ") nor a file");
  }
  const uintmax_t size = std::filesystem::file_size(name_or_file, ec);
  if (ec) throw IoError(name_or_file, ec.message());
  if (size > kMaxTemplateFileBytes) throw IoError(name_or_file, "chat template file larger than 1 MiB");
  std::ifstream in(name_or_file, std::ios::binary);
  if (!in) throw IoError(name_or_file, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // A Hugging Face tokenizer_config.json: take its chat_template (a string,
  // or a list of {name, template} of which "default" is used).
  if (!text.empty() && text[0] == '{') {
    const Json cfg = Json::parse(text, nullptr, false);
    if (cfg.is_object() && cfg.contains("chat_template")) {
      const Json& t = cfg["chat_template"];
      if (t.is_string()) return t.get<std::string>();
      if (t.is_array()) {
        for (const auto& entry : t) {
          if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
              entry["template"].is_string()) {
            return entry["template"].get<std::string>();
          }
        }
      }
      throw InvalidArgument(name_or_file + ": chat_template is neither a string nor a list with a \"default\"");
    }
  }
  return text;
}

}  // namespace ferrite::chat
