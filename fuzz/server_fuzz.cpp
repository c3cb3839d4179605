// libFuzzer target for the server's parsers of untrusted text: any byte
// string, read as a chat request body (messages, tools, tool_choice and the
// grammar of a forced call) and as a model's reply that may hold tool calls,
// must either work or raise a ferrite::Error (the server answers 400); never
// crash, hang or allocate without bound. Built from those sources alone
// (fuzz/CMakeLists.txt), not the whole engine.
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"
#include "core/error.h"
#include "grammar/grammar.h"
#include "runtime/chat_format.h"
#include "chat/tool_calls.h"
#include "server/tool_choice.h"

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxInput = 64 * 1024;
// The server refuses request bodies nested deeper (routes_common.cpp).
constexpr int kMaxJsonDepth = 128;

void request(const Json& body) {
  Json tools = nullptr;
  try {
    tools = ferrite::server::parse_tools(body);
    const ferrite::server::ToolChoice choice = ferrite::server::parse_tool_choice(body, tools);
    if (choice.forced) {
      const std::string gbnf = ferrite::server::forced_call_gbnf(tools, choice.function);
      (void)ferrite::grammar::Grammar::parse(gbnf);
    }
  } catch (const ferrite::Error&) {
  }
  if (!body.contains("messages")) return;
  try {
    const Json messages = ferrite::runtime::normalize_messages(body["messages"]);
    ferrite::chat::ChatOptions options;
    options.add_generation_prompt = true;
    options.tools = tools;
    options.render.now_utc_seconds = 0;
    options.render.limits.max_work = 2'000'000;
    for (const char* name : {"chatml", "llama3"}) {
      (void)ferrite::chat::apply_chat_template(ferrite::chat::builtin_template(name), messages, options);
    }
  } catch (const ferrite::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kMaxInput) return 0;
  const std::string input(reinterpret_cast<const char*>(data), size);
  // The input as a model's reply.
  const ferrite::chat::ParsedReply reply = ferrite::chat::parse_tool_calls(input);
  for (const ferrite::chat::ToolCall& call : reply.calls) {
    if (!Json::accept(call.arguments)) __builtin_trap();  // a parsed call's arguments are JSON text
  }
  // The input as a request body.
  const auto limit_depth = [](int depth, Json::parse_event_t, Json&) { return depth <= kMaxJsonDepth; };
  const Json body = Json::parse(input, limit_depth, false);
  if (!body.is_discarded() && body.is_object()) request(body);
  return 0;
}
