// A generation request as the engine sees it, and the channel through which
// the engine thread hands its results to the HTTP thread that waits for them.
//
//   auto task = std::make_shared<Task>(params);
//   if (!engine.submit(task)) ... 503 ...
//   Event ev;
//   while (task->next(ev)) { ... ev.text ... if (ev.final) break; }
//
// The HTTP side may cancel() at any time (client gone, shutdown); the engine
// then frees the slot at its next step and closes the channel.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/tool_calls.h"
#include "runtime/generation.h"

namespace ferrite::server {

// The generation step's parameters (runtime/generation.h: sampler, token
// budget (n_predict < 0: until the slot's share of the cache is full),
// stop strings, grammar, log-probabilities (n_probs >= 0), tool-call
// parsing) and what the engine adds.
struct GenerationParams : runtime::GenerationParams {
  std::vector<int32_t> prompt;          // token ids (BOS included when wanted)
  int64_t n_keep = 0;                   // prompt tokens a context shift keeps after the BOS (-1: all)
  bool embedding = false;               // an embedding request (encoder models)
  std::vector<int32_t> token_types;     // embedding requests: each prompt token's type (a rerank pair's), or empty: 0
  std::optional<std::vector<float>> lora;  // the request's LoRA scales, one per adapter (absent: the server's)
};

struct TokenInfo {
  int32_t id = 0;
  std::string piece;                                // the token's bytes
  float logprob = 0.0f;                             // log-softmax of the raw logits
  std::vector<std::pair<int32_t, float>> top;       // best (id, logprob), most likely first
};

enum class FinishReason { None, Stop, Length, Cancelled, Error };
const char* finish_reason_name(FinishReason r);

// Whose fault an Error is: the request's (its grammar failed while
// generating: a 400) or the server's (a 500).
enum class ErrorKind { Internal, BadRequest };

struct Timings {
  int32_t n_prompt = 0;        // prompt tokens of the request
  int32_t n_cached = 0;        // of those, reused from the slot's cache
  int32_t n_generated = 0;     // tokens sampled
  int32_t n_shifted = 0;       // tokens a context shift dropped from the slot
  int32_t n_drafted = 0;       // speculative draft tokens verified (llama-server's draft_n)
  int32_t n_draft_accepted = 0;  // of those, accepted (draft_n_accepted)
  double prompt_ms = 0.0;
  double generation_ms = 0.0;
};

// One message from the engine: new text (already cut at stop strings), the
// tokens it came from (when logprobs are wanted) and, for the last one, why
// generation ended and the counts.
struct Event {
  std::string text;
  std::vector<TokenInfo> tokens;
  bool final = false;
  FinishReason finish = FinishReason::None;
  std::string stop_word;       // the stop string that ended generation
  std::optional<chat::ParsedReply> reply;  // the final event with parse_tool_calls: the reply's tool calls
  std::string error;           // with FinishReason::Error
  ErrorKind error_kind = ErrorKind::Internal;
  Timings timings;
  int slot = -1;
  std::vector<float> embedding;  // embedding requests
};

class Task {
 public:
  explicit Task(GenerationParams params) : params_(std::move(params)) {}

  const GenerationParams& params() const { return params_; }

  // Engine side: queue an event (after a final one nothing more is queued).
  void push(Event ev);

  // HTTP side: waits for the next event; false once the final one has been
  // taken or the task was cancelled.
  bool next(Event& out);

  // Either side: stop generating. Safe to call repeatedly and from any thread.
  void cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  bool finished() const;
  // The error kind of the final event (Internal until one is pushed).
  ErrorKind error_kind() const;

 private:
  GenerationParams params_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Event> events_;
  bool closed_ = false;     // the final event was pushed
  ErrorKind error_kind_ = ErrorKind::Internal;
  bool delivered_ = false;  // the final event was taken
};

}  // namespace ferrite::server
