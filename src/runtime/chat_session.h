// A multi-turn chat on one sequence of a Context: the message list, the
// model's chat template, and the tokens the KV cache holds. Each turn renders
// the whole conversation, tokenizes it, keeps the part of the cache that
// matches (the common token prefix) and evaluates only the rest. A
// conversation longer than the context goes on: the sequence shifts (keeps
// its first n_keep tokens, drops the oldest half of the rest; sequence.h).
//
//   runtime::ChatSession chat(ctx, tok, {.template_source = src, .system_prompt = "Be brief."});
//   auto answer = chat.respond("Hello", {.sampling = sp}, [](std::string_view s) { print(s); });
//   chat.save("talk.json");     // messages, and the KV cache in talk.json.kv
//   chat.load("talk.json");     // restores both (re-evaluates if the KV file
//                               // is missing or from another model)
//
// The context and tokenizer must outlive the session; nothing else may use the
// session's sequence meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chat/template.h"
#include "runtime/context.h"
#include "runtime/generation.h"
#include "runtime/sequence.h"
#include "runtime/speculative.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

struct ChatSessionParams {
  std::string template_source;  // Jinja source (chat::load_chat_template or the model's)
  std::string system_prompt;    // empty: none
  int seq = 0;                  // the cache sequence the session uses
  int64_t prefill_chunk = 512;  // prompt tokens per eval() between interrupt checks
  int64_t n_keep = 0;           // conversation tokens a context shift keeps at the start (after the BOS)
  bool context_shift = true;    // false: a conversation that outgrows the context is an error
};

struct ChatAnswer {
  std::string text;
  int64_t n_tokens = 0;
  FinishReason stop = FinishReason::kEndOfGeneration;
  PrefillStats prefill;
  double seconds = 0;  // generation time
  SpeculativeStats speculative;  // with set_speculation
};

class ChatSession {
 public:
  // Throws TemplateSyntaxError for a bad template.
  ChatSession(Context& ctx, const tokenizer::Tokenizer& tok, ChatSessionParams params);

  const std::vector<ChatMessage>& messages() const { return messages_; }
  void add_message(std::string role, std::string content);
  // Removes the last message (no-op when there is none).
  void pop_message();

  // The conversation rendered by the template, and its tokens (BOS added
  // when the vocabulary wants one and the template did not write it).
  std::string render(bool add_generation_prompt) const;
  std::vector<int32_t> tokenize(const std::string& text) const;

  // Makes the session's sequence continue `tokens` (Sequence::prefill:
  // the cache keeps what it holds of them) and returns the logits after the
  // last one. When `interrupt` becomes set between chunks, returns an empty
  // span (the cache holds a prefix of `tokens`).
  std::span<const float> prefill(std::span<const int32_t> tokens, PrefillStats* stats = nullptr,
                                 const std::atomic<bool>* interrupt = nullptr);
  // Tokens the cache holds for this session, in order.
  const std::vector<int32_t>& cached_tokens() const { return seq_.cached(); }
  const Sequence& sequence() const { return seq_; }

  // One turn: adds the user message, prefills, generates the answer (text
  // goes to `on_text` as it is decoded) and adds it as the assistant message
  // (also when interrupted; an interrupt during the prefill drops the user
  // message instead). With context shift off, a conversation that no longer
  // fits the context throws InvalidArgument and leaves the messages as they
  // were; so do bad parameters.
  ChatAnswer respond(const std::string& user_text, const GenerationParams& params,
                     const std::function<void(std::string_view)>& on_text = {});

  // Speculative decoding for the later answers (`drafter` null: none); the
  // drafter must outlive the session.
  void set_speculation(Drafter* drafter, SpeculativeParams params) {
    drafter_ = drafter;
    spec_params_ = params;
  }

  // Back to the system prompt alone; the cache sequence is cleared.
  void reset();
  // Writes the messages as JSON to `path` and the session's KV cells (with
  // their tokens) to `path`.kv; returns false when the context cannot save
  // its cache (GPU offload) or the context has shifted (the cache no longer
  // holds the conversation as one run), leaving the messages alone saved.
  // Throws IoError.
  bool save(const std::string& path) const;
  // Replaces the messages with a saved conversation. Its KV file, when
  // present and made by the same model, is restored; the conversation's
  // tokens the cache still lacks are then evaluated. Throws IoError,
  // InvalidArgument (not a saved chat, or too long for the context; the
  // messages are then unchanged, the cache holds what it says it holds).
  PrefillStats load(const std::string& path);

 private:
  Context& ctx_;
  const tokenizer::Tokenizer& tok_;
  ChatSessionParams params_;
  chat::Template template_;
  std::string bos_text_, eos_text_;
  std::vector<ChatMessage> messages_;
  GenerationVocab vocab_;
  Sequence seq_;
  Drafter* drafter_ = nullptr;
  SpeculativeParams spec_params_;
};

}  // namespace ferrite::runtime
