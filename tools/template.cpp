// `ferrite template`: renders a conversation with a chat template and prints
// the prompt. The template comes from the model (`-m`, its
// tokenizer.chat_template) or `--template NAME|FILE` (a built-in name or a
// Jinja file; it wins over the model's). The messages file holds a JSON
// array of messages, or an object {"messages": [...], "tools": [...]}.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "command.h"
#include "core/error.h"
#include "gguf/file.h"
#include "model_path.h"

namespace ferrite::tools {
namespace {

// Messages files larger than this are refused.
constexpr std::streamoff kMaxMessagesBytes = 64 << 20;

struct TemplateOptions {
  std::string model;
  std::string tmpl;
  std::string messages;
  std::string tools;
  std::vector<std::string> vars;
  bool add_generation_prompt = false;
};

chat::Json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw IoError(path, "cannot open");
  if (in.tellg() > kMaxMessagesBytes) throw IoError(path, "file larger than 64 MiB");
  in.seekg(0);
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return chat::Json::parse(ss.str());
  } catch (const chat::Json::parse_error& e) {
    throw InvalidArgument(path + ": not valid JSON: " + e.what());
  }
}

// The text of token `key` (tokenizer.ggml.bos_token_id, ...) or "".
std::string token_text(const gguf::File& file, const char* key) {
  const gguf::Value* id = file.find(key);
  const gguf::Value* tokens = file.find("tokenizer.ggml.tokens");
  if (!id || !tokens || !tokens->is_array() || !id->is_integer()) return "";
  const int64_t i = id->as_int();
  if (i < 0 || static_cast<uint64_t>(i) >= tokens->size()) return "";
  const gguf::Value& t = tokens->items()[static_cast<size_t>(i)];
  return t.is_string() ? t.as_string() : "";
}

int run_template(const TemplateOptions& opt) {
  if (opt.model.empty() && opt.tmpl.empty()) throw InvalidArgument("give -m MODEL or --template NAME|FILE");
  std::string source;
  chat::ChatOptions chat_opt;
  if (!opt.model.empty()) {
    const gguf::File file = gguf::File::open(resolve_model_argument(opt.model));
    chat_opt.bos_token = token_text(file, "tokenizer.ggml.bos_token_id");
    chat_opt.eos_token = token_text(file, "tokenizer.ggml.eos_token_id");
    if (opt.tmpl.empty()) {
      const gguf::Value* t = file.find("tokenizer.chat_template");
      if (!t || !t->is_string()) {
        throw ModelError(file.path() + " has no tokenizer.chat_template; choose one with --template (" +
                         [] {
                           std::string names;
                           for (const auto& n : chat::builtin_template_names()) names += (names.empty() ? "" : ", ") + n;
                           return names;
                         }() +
                         ")");
      }
      source = t->as_string();
    }
  }
  if (!opt.tmpl.empty()) source = chat::load_chat_template(opt.tmpl);

  chat::Json doc = read_json_file(opt.messages);
  chat::Json messages = doc;
  if (doc.is_object()) {
    if (!doc.contains("messages")) throw InvalidArgument(opt.messages + ": object without a \"messages\" array");
    messages = doc["messages"];
    if (doc.contains("tools")) chat_opt.tools = doc["tools"];
  }
  if (!opt.tools.empty()) chat_opt.tools = read_json_file(opt.tools);
  for (const std::string& kv : opt.vars) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw InvalidArgument("--var expects NAME=JSON, got '" + kv + "'");
    try {
      chat_opt.extra[kv.substr(0, eq)] = chat::Json::parse(kv.substr(eq + 1));
    } catch (const chat::Json::parse_error&) {
      chat_opt.extra[kv.substr(0, eq)] = kv.substr(eq + 1);  // a bare string
    }
  }
  chat_opt.add_generation_prompt = opt.add_generation_prompt;
  const std::string prompt = chat::apply_chat_template(source, messages, chat_opt);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return 0;
}

const CommandRegistrar kTemplate(
    {"template", "Render a conversation with a chat template and print the prompt",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<TemplateOptions>();
       sub.add_option("-m,--model,model", opt->model, "Model file or name (its tokenizer.chat_template, BOS and EOS)");
       sub.add_option("--template,--chat-template", opt->tmpl, "Built-in template name or Jinja file");
       sub.add_option("--messages", opt->messages, "JSON file: array of messages or {messages, tools}")->required();
       sub.add_option("--tools", opt->tools, "JSON file: array of tool schemas");
       sub.add_option("--var", opt->vars, "Extra template variable NAME=JSON (repeatable)");
       sub.add_flag("--add-generation-prompt", opt->add_generation_prompt, "End with the assistant turn header");
       return [opt] { return run_template(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
