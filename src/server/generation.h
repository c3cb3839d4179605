// Running requests through the engine from an HTTP thread: submitting the
// tasks of one request, collecting their results, and the pieces of JSON
// every endpoint shares (usage, logprobs).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/engine.h"
#include "server/task.h"

namespace ferrite::server {

// Submits every task; on a full queue cancels those already queued and
// throws ApiError 503.
std::vector<std::shared_ptr<Task>> submit_tasks(Engine& engine, std::vector<GenerationParams> params);

void cancel_all(const std::vector<std::shared_ptr<Task>>& tasks);

struct Completion {
  std::string text;
  std::vector<TokenInfo> tokens;
  FinishReason finish = FinishReason::None;
  std::string stop_word;
  std::optional<chat::ParsedReply> reply;  // with parse_tool_calls
  Timings timings;
  int slot = -1;
  std::vector<float> embedding;
};

// Waits for the final event of `task`, gathering its text and tokens.
// Throws ApiError 500 for an engine error, 503 when it was cancelled.
Completion collect(Task& task);

// Throws the ApiError that a final error/cancelled event stands for.
[[noreturn]] void throw_for(const Event& ev);

// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details": {"cached_tokens"}}
nlohmann::ordered_json usage_json(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens);

// llama-server's "timings": {"prompt_n" (evaluated), "cache_n", "prompt_ms", "predicted_n", "predicted_ms",
// "prompt_per_second" (evaluated / prompt time) and "predicted_per_second" (the tokens after the first over
// the time since the first) when those are defined}.
nlohmann::ordered_json timings_json(const Timings& t);

// Chat-style logprobs entries: [{"token", "logprob", "bytes", "top_logprobs": [...]}].
nlohmann::ordered_json chat_logprobs(const std::vector<TokenInfo>& tokens, const tokenizer::Tokenizer& tok);
// Completions-style logprobs: {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
nlohmann::ordered_json completion_logprobs(const std::vector<TokenInfo>& tokens, const tokenizer::Tokenizer& tok,
                                   size_t text_offset);

// Seeds for n choices: the request's seed for the first, then seed + i.
std::vector<GenerationParams> replicate(const GenerationParams& base, int n);

// Unix time in seconds, and a fresh id with a prefix ("chatcmpl-...").
int64_t unix_time();
std::string new_id(const std::string& prefix);

}  // namespace ferrite::server
