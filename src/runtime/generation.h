// The generation step every surface uses (ferrite run and chat, the server's
// slots, the Python binding): from one evaluation's logits to the next token
// and the text that may be shown now. It owns the sampler chain (with the
// grammar / JSON-schema constraint), the streaming detokenizer, stop strings,
// log-probabilities, the token budget and, at the end, the tool calls parsed
// out of the reply; it reports one finish reason. It never runs the model:
// the caller evaluates each returned token (and makes room for it).
//
//   GenerationVocab vocab(tok);                     // once per tokenizer
//   Generation gen(vocab, params, {.n_ctx = C, .n_ctx_train = T}, prompt);
//   std::span<const float> logits = ctx.eval(prompt);
//   for (;;) {
//     GenerationStep s = gen.next(logits);          // sample, detokenize, stop?
//     show(s.text);
//     if (s.finish != FinishReason::kNone) break;
//     logits = ctx.eval({&s.token, 1});
//   }
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "chat/tool_calls.h"
#include "runtime/grammar_constraint.h"
#include "runtime/stop_strings.h"
#include "sampling/sampler.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {

// Why a generation ended (kNone while it goes on).
enum class FinishReason {
  kNone,
  kEndOfGeneration,  // the model sampled an end-of-generation token
  kStopString,       // a stop string appeared (Generation::stop_word())
  kGrammar,          // the grammar admits nothing more
  kLength,           // the token budget (n_predict) is spent
  kContextFull,      // no room for the next token and context shift is off
  kInterrupted,      // the caller asked to stop
};

// "eog", "stop", "grammar", "length", "context", "interrupted" ("" for kNone).
const char* finish_reason_name(FinishReason r);
// OpenAI's finish_reason: "stop" (end of generation, stop string, grammar,
// interrupted) or "length" (token budget, full context).
const char* openai_finish_reason(FinishReason r);

struct GenerationParams {
  sampling::SamplerParams sampling;
  int64_t n_predict = -1;          // tokens at most; < 0: no budget
  std::vector<std::string> stop;   // stop strings, cut from the text
  std::string grammar;             // GBNF constraining the output; empty: none
  int n_probs = -1;                // < 0: no log-probabilities; else the alternatives per token
  bool ignore_eos = false;         // go on past end-of-generation tokens
  bool parse_tool_calls = false;   // keep the reply and parse tool calls out of it at the end
  const std::atomic<bool>* interrupt = nullptr;  // checked at every step
};

// What the sampler chain needs of the context the generation runs in.
struct GenerationContext {
  int32_t n_ctx = 0;        // cells the sequence may use (resolves -1 windows)
  int32_t n_ctx_train = 0;  // the model's training context (DRY's cap)
};

// What every generation over one tokenizer shares, built on first use and
// safe to share between threads: the token pieces grammar constraints match
// against (and their trie), the newline token.
class GenerationVocab {
 public:
  explicit GenerationVocab(const tokenizer::Tokenizer& tok);
  const tokenizer::Tokenizer& tokenizer() const { return tok_; }
  std::shared_ptr<const VocabPieces> grammar_pieces();
  // The sampler chain's view of the model for `params` (token pieces only
  // when DRY needs them to place its sequence breakers).
  sampling::ModelInfo sampling_info(const sampling::SamplerParams& params, const GenerationContext& c) const;

 private:
  const tokenizer::Tokenizer& tok_;
  int32_t newline_ = -1;
  std::mutex mu_;
  std::shared_ptr<const VocabPieces> pieces_;
};

struct TokenLogprob {
  float logprob = 0.0f;                        // log p(token) under the raw logits
  std::vector<std::pair<int32_t, float>> top;  // the best alternatives, most likely first
};

// What one step produced.
struct GenerationStep {
  int32_t token = -1;                  // the sampled token; -1 when the step only ended the generation
  std::string text;                    // text that may be shown now (whole UTF-8, stop strings cut)
  bool has_logprob = false;            // with n_probs >= 0 and a token sampled
  TokenLogprob logprob;
  FinishReason finish = FinishReason::kNone;
  // The caller must evaluate `token` before the next step.
  bool needs_eval() const { return finish == FinishReason::kNone; }
};

class Generation {
 public:
  // `prompt`: the tokens the generation continues (the penalties and DRY
  // see them; the text starts where their text ends, so a first piece keeps
  // its leading space unless the prompt shows no text). Throws
  // InvalidArgument for bad parameters or grammars. `vocab` must outlive it.
  Generation(GenerationVocab& vocab, GenerationParams params, const GenerationContext& context,
             std::span<const int32_t> prompt);
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Samples from the logits after the last evaluated token. A step whose
  // finish is set ends the generation (its text is the last, the held-back
  // text included); its token, if any, must not be evaluated.
  GenerationStep next(std::span<const float> logits);
  // Ends the generation now (interrupt, full context, cancellation):
  // returns the text still held back.
  GenerationStep end(FinishReason why);

  bool done() const { return finish_ != FinishReason::kNone; }
  FinishReason finish() const { return finish_; }
  int64_t n_generated() const { return n_generated_; }
  // Tokens the budget still allows (-1: no budget).
  int64_t n_left() const {
    return params_.n_predict < 0 ? -1 : std::max<int64_t>(0, params_.n_predict - n_generated_);
  }
  // The stop string that ended the generation ("" otherwise).
  const std::string& stop_word() const { return stops_.matched(); }
  // The whole reply (with parse_tool_calls) and its tool calls (after the end).
  const std::string& text() const { return text_; }
  const chat::ParsedReply& reply() const { return reply_; }
  uint64_t seed() const { return sampler_.seed(); }
  const sampling::Sampler& sampler() const { return sampler_; }

 private:
  GenerationStep finish_with(GenerationStep s, FinishReason why);
  void emit(GenerationStep& s, const std::string& piece);

  const tokenizer::Tokenizer* tok_;
  GenerationParams params_;
  sampling::Sampler sampler_;
  std::shared_ptr<GrammarConstraint> constraint_;
  tokenizer::StreamDecoder decoder_;
  StopStrings stops_;
  std::string text_;
  chat::ParsedReply reply_;
  int64_t n_generated_ = 0;
  FinishReason finish_ = FinishReason::kNone;
};

}  // namespace ferrite::runtime
