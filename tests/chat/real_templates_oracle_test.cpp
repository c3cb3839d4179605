// Real chat templates (Hugging Face tokenizer_config.json files and the
// tokenizer.chat_template of shared GGUF vocabularies) and ferrite's
// built-in templates, rendered for a set of conversations by ferrite and by
// Python's jinja2; outputs must be identical.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "gguf/file.h"
#include "oracle.h"

namespace ferrite::chat::test {
namespace {

const Json& tools() {
  static const Json t = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Current weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "description": "Adds two numbers",
      "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}
  ])");
  return t;
}

struct Conversation {
  const char* name;
  const char* messages;
  bool with_tools;
};

const std::vector<Conversation>& conversations() {
  static const std::vector<Conversation> c = {
      {"user_only", R"([{"role": "user", "content": "Hello!"}])", false},
      {"system_user", R"([{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi there"}])",
       false},
      {"multi_turn", R"([{"role": "system", "content": "Be helpful."}, {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"}, {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6"}, {"role": "user", "content": "Thanks"}])", false},
      {"no_system_multi", R"([{"role": "user", "content": "  padded  "}, {"role": "assistant", "content": "ok "},
        {"role": "user", "content": "again\n"}])", false},
      {"empty_content", R"([{"role": "system", "content": ""}, {"role": "user", "content": ""},
        {"role": "assistant", "content": ""}, {"role": "user", "content": "x"}])", false},
      {"unicode", R"([{"role": "user", "content": "Grüße, 世界! 😀 \"quotes\" and \\backslash\\\n\ttab"},
        {"role": "assistant", "content": "Très bien ✓"}, {"role": "user", "content": "{{ not a template }}"}])",
       false},
      {"thinking", R"([{"role": "user", "content": "Think first"},
        {"role": "assistant", "content": "<think>\nreasoning here\n</think>\n\nThe answer."},
        {"role": "user", "content": "More?"}, {"role": "assistant", "content": "<think>more</think>Yes."}])",
       false},
      {"tools_call", R"([{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather",
          "arguments": {"city": "Paris", "unit": "celsius"}}}]},
        {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21}"},
        {"role": "assistant", "content": "It is 21 °C."}])", true},
      {"tools_parallel", R"([{"role": "user", "content": "Add 1+2 and 3+4"},
        {"role": "assistant", "content": "Calling.", "tool_calls": [
          {"type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}},
          {"type": "function", "function": {"name": "add", "arguments": {"a": 3, "b": 4}}}]},
        {"role": "tool", "content": "3"}, {"role": "tool", "content": "7"}, {"role": "user", "content": "ok"}])",
       true},
      {"tools_no_system", R"([{"role": "user", "content": "<tool_response>x</tool_response>"}])", true},
  };
  return c;
}

struct NamedTemplate {
  std::string name;
  std::string source;
  std::string bos;
  std::string eos;
  Json extra = Json::object();
};

void add_cases(std::vector<OracleCase>& cases, const NamedTemplate& t) {
  for (const auto& conv : conversations()) {
    for (bool gen : {false, true}) {
      ChatOptions opt;
      opt.bos_token = t.bos;
      opt.eos_token = t.eos;
      opt.add_generation_prompt = gen;
      opt.extra = t.extra;
      if (conv.with_tools) opt.tools = tools();
      cases.push_back({t.name + "/" + conv.name + (gen ? "/gen" : ""), t.source,
                       chat_context(Json::parse(conv.messages), opt)});
    }
  }
}

NamedTemplate from_tokenizer_config(const std::filesystem::path& path, const std::string& name) {
  const Json cfg = Json::parse(::ferrite::test::read_file(path));
  NamedTemplate t{name, cfg["chat_template"].get<std::string>(), "", ""};
  if (cfg.contains("bos_token") && cfg["bos_token"].is_string()) t.bos = cfg["bos_token"].get<std::string>();
  if (cfg.contains("eos_token") && cfg["eos_token"].is_string()) t.eos = cfg["eos_token"].get<std::string>();
  return t;
}

NamedTemplate from_gguf(const std::filesystem::path& path, const std::string& name) {
  const gguf::File f = gguf::File::open(path.string());
  NamedTemplate t{name, f.get("tokenizer.chat_template").as_string(), "", ""};
  const auto& tokens = f.get("tokenizer.ggml.tokens").items();
  t.bos = tokens.at(static_cast<size_t>(f.get("tokenizer.ggml.bos_token_id").as_int())).as_string();
  t.eos = tokens.at(static_cast<size_t>(f.get("tokenizer.ggml.eos_token_id").as_int())).as_string();
  return t;
}

TEST(ChatRealTemplates, HuggingFaceConfigsMatchJinja2) {
  FERRITE_SHARED_FILE(llama3, "templates/llama3.tokenizer_config.json");
  FERRITE_SHARED_FILE(qwen3, "templates/qwen3.tokenizer_config.json");
  std::vector<OracleCase> cases;
  add_cases(cases, from_tokenizer_config(llama3, "llama3-config"));
  add_cases(cases, from_tokenizer_config(qwen3, "qwen3-config"));
  NamedTemplate qwen3_no_think = from_tokenizer_config(qwen3, "qwen3-config-nothink");
  qwen3_no_think.extra = Json{{"enable_thinking", false}};
  add_cases(cases, qwen3_no_think);
  if (expect_matches_oracle(cases) == 0) GTEST_SKIP() << "jinja2 oracle unavailable";
}

TEST(ChatRealTemplates, GgufTemplatesMatchJinja2) {
  FERRITE_SHARED_FILE(llama_bpe, "vocab/ggml-vocab-llama-bpe.gguf");
  FERRITE_SHARED_FILE(qwen2, "vocab/ggml-vocab-qwen2.gguf");
  FERRITE_SHARED_FILE(phi3, "vocab/ggml-vocab-phi-3.gguf");
  std::vector<OracleCase> cases;
  add_cases(cases, from_gguf(llama_bpe, "gguf-llama-bpe"));
  add_cases(cases, from_gguf(qwen2, "gguf-qwen2"));
  add_cases(cases, from_gguf(phi3, "gguf-phi-3"));
  if (expect_matches_oracle(cases) == 0) GTEST_SKIP() << "jinja2 oracle unavailable";
}

TEST(ChatRealTemplates, BuiltinTemplatesMatchJinja2) {
  std::vector<OracleCase> cases;
  for (const std::string& name : builtin_template_names()) {
    add_cases(cases, NamedTemplate{"builtin-" + name, builtin_template(name), "<s>", "</s>"});
  }
  ASSERT_GE(builtin_template_names().size(), 6u);
  if (expect_matches_oracle(cases) == 0) GTEST_SKIP() << "jinja2 oracle unavailable";
}

// The built-in templates render the plain conversations (no tools) without
// error: they are fallbacks and must work for every model.
TEST(ChatRealTemplates, BuiltinTemplatesRenderPlainConversations) {
  for (const std::string& name : builtin_template_names()) {
    const Template t = Template::parse(builtin_template(name));
    for (const auto& conv : conversations()) {
      if (conv.with_tools || std::string(conv.name) == "no_system_multi" || std::string(conv.name) == "empty_content") {
        continue;
      }
      ChatOptions opt;
      opt.bos_token = "<s>";
      opt.eos_token = "</s>";
      opt.add_generation_prompt = true;
      const Json messages = Json::parse(conv.messages);
      const std::string out = apply_chat_template(t, messages, opt);
      // Every message's text appears in the prompt.
      for (const auto& m : messages) {
        const std::string content = m["content"].get<std::string>();
        std::string trimmed = content;
        while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
        while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.front()))) trimmed.erase(0, 1);
        EXPECT_NE(out.find(trimmed), std::string::npos) << name << "/" << conv.name << ": " << trimmed;
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::chat::test
