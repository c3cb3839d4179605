// A multi-turn chat on one sequence of a Context: the message list, the
// model's chat template, and the tokens the KV cache holds. Each turn renders
// the whole conversation, tokenizes it, keeps the part of the cache that
// matches (the common token prefix) and evaluates only the rest.
//
//   runtime::ChatSession chat(ctx, tok, {.template_source = src, .system_prompt = "Be brief."});
//   auto answer = chat.respond("Hello", sampler, {}, [](std::string_view s) { print(s); });
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
#include "sampling/sampler.h"
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
};

// How many leading tokens of `wanted` can stay in a cache holding `cached`:
// their common prefix, but never all of `wanted` (the last token is always
// evaluated so that its logits exist).
int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> wanted);

struct PrefillStats {
  int64_t n_prompt = 0;     // tokens of the rendered conversation
  int64_t n_reused = 0;     // of those, kept from the cache
  int64_t n_evaluated = 0;  // of those, evaluated now (n_prompt - n_reused)
  double seconds = 0;
  std::string kv_note;      // load(): how the KV state was restored, or why not
};

enum class StopReason { kEndOfGeneration, kLength, kContextFull, kInterrupted };

struct GenerateParams {
  int n_predict = -1;                             // answer tokens at most; < 0: no limit
  bool ignore_eos = false;                        // go on past end-of-generation tokens
  const std::atomic<bool>* interrupt = nullptr;   // checked before every token
};

struct ChatAnswer {
  std::string text;
  int64_t n_tokens = 0;
  StopReason stop = StopReason::kEndOfGeneration;
  PrefillStats prefill;
  double seconds = 0;  // generation time
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

  // Makes the cache hold exactly `tokens` (reusing the common prefix) and
  // returns the logits after the last one. Throws InvalidArgument for no
  // tokens or more than the context holds (the cache is then unchanged).
  // When `interrupt` becomes set between chunks, returns an empty span (the
  // cache holds a prefix of `tokens`; stats count what was evaluated).
  std::span<const float> prefill(std::span<const int32_t> tokens, PrefillStats* stats = nullptr,
                                 const std::atomic<bool>* interrupt = nullptr);
  // Appends one token to the cache; returns the logits after it.
  std::span<const float> feed(int32_t token);
  // Tokens the cache holds for this session, in order.
  const std::vector<int32_t>& cached_tokens() const { return cached_; }
  // Cache cells still free for this session.
  int64_t space_left() const;

  // One turn: adds the user message, prefills, samples the answer (text goes
  // to `on_text` as it is decoded) and adds it as the assistant message (also
  // when interrupted; an interrupt during the prefill drops the user message
  // instead). A conversation that no longer fits the context throws
  // InvalidArgument and leaves the messages as they were.
  ChatAnswer respond(const std::string& user_text, sampling::Sampler& sampler, const GenerateParams& params,
                     const std::function<void(std::string_view)>& on_text = {});

  // Back to the system prompt alone; the cache sequence is cleared.
  void reset();
  // Writes the messages as JSON to `path` and the session's KV cells (with
  // their tokens) to `path`.kv; returns false when the context cannot save
  // its cache (GPU offload), leaving the messages alone saved. Throws IoError.
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
  std::vector<int32_t> cached_;
};

}  // namespace ferrite::runtime
