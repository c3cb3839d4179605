// libFuzzer target for the chat module (Jinja chat templates, which come from
// model files and --chat-template): any byte string, read as a template and
// rendered with a small conversation, and read as a JSON message list
// rendered with every built-in template, must either work or raise a
// ferrite::Error (syntax, render or sandbox-limit error); never crash, hang
// or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"

namespace {

using ferrite::chat::Json;

constexpr size_t kMaxInput = 64 * 1024;
// JSON nesting the fuzzer accepts (the server refuses deeper request bodies).
constexpr int kMaxJsonDepth = 64;

// Tighter sandbox than the default, so one input cannot use up the fuzzer's
// per-input timeout while staying inside the limits.
ferrite::chat::ChatOptions fuzz_options() {
  ferrite::chat::ChatOptions o;
  o.add_generation_prompt = true;
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  o.render.now_utc_seconds = 1'700'000'000;  // strftime_now without the clock: reproducible
  o.render.limits.max_loop_iterations = 20'000;
  o.render.limits.max_output_bytes = 1u << 20;
  o.render.limits.max_string_bytes = 1u << 20;
  o.render.limits.max_work = 2'000'000;
  o.tools = Json::array({{{"type", "function"},
                          {"function",
                           {{"name", "get_weather"},
                            {"description", "Weather of a city"},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"city", {{"type", "string"}}}}},
                              {"required", {"city"}}}}}}}});
  return o;
}

const Json& conversation() {
  static const Json messages = Json::parse(R"([
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [
      {"id": "call_1", "type": "function",
       "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 12}"},
    {"role": "assistant", "content": "12 \u00b0C."},
    {"role": "user", "content": [{"type": "text", "text": "And tomorrow?"}]}
  ])");
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const ferrite::chat::ChatOptions options = fuzz_options();
  // The input as a template.
  try {
    (void)ferrite::chat::apply_chat_template(input, conversation(), options);
  } catch (const ferrite::Error&) {
  }
  // The input as the messages of every built-in template.
  const auto limit_depth = [](int depth, Json::parse_event_t, Json&) { return depth <= kMaxJsonDepth; };
  const Json messages = Json::parse(input, limit_depth, false);
  if (messages.is_discarded() || !messages.is_array()) return 0;
  for (const std::string& name : ferrite::chat::builtin_template_names()) {
    try {
      (void)ferrite::chat::apply_chat_template(ferrite::chat::builtin_template(name), messages, options);
    } catch (const ferrite::Error&) {
    }
  }
  return 0;
}
