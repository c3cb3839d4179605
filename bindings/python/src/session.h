// The state behind one Python `ferrite.Llama`: a loaded model, its
// tokenizer, an inference context on sequence 0, and the tokens the cache
// holds (so a prompt that extends the previous one reuses the cache).
//
// Methods that evaluate release the GIL while the model runs; they must be
// called with the GIL held. A Session is not for concurrent use: a second
// thread entering while one evaluates gets InvalidArgument, never a race.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/model.h"
#include "runtime/context.h"
#include "runtime/generation.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::python {

struct SessionParams {
  std::string model_path;
  int64_t n_ctx = 512;     // 0: the model's training context (capped by the runtime)
  int64_t n_batch = 512;
  int n_threads = 0;       // 0: all CPUs
  bool embedding = false;  // the caller means to compute embeddings
  bool vocab_only = false; // the tokenizer alone (no weights, no context)
  int n_gpu_layers = 0;    // offloaded layers (-1: all) when built with CUDA; ignored otherwise
  int pooling_type = -1;   // embeddings' pooling (runtime::ContextParams::pooling_type)
  std::string lora_path;   // a LoRA adapter (llama.cpp's GGUF format), or empty
  float lora_scale = 1.0f; // its scale
};

class Session {
 public:
  // Throws IoError / FormatError / ModelError / InvalidArgument.
  explicit Session(const SessionParams& params);

  // model() and context() throw InvalidArgument for a vocab-only session.
  const model::Model& model() const;
  const gguf::File& file() const { return *file_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
  runtime::Context& context();
  const SessionParams& params() const { return params_; }
  bool vocab_only() const { return !model_; }
  bool is_encoder() const { return model_ && model_->arch().is_encoder(); }

  std::vector<int32_t> tokenize(const std::string& text, bool add_bos, bool special) const;
  std::string detokenize(const std::vector<int32_t>& tokens, bool special) const;

  // Makes the cache hold exactly `tokens` (keeping the common prefix with
  // what it holds, always re-evaluating at least the last token) and
  // returns the logits after the last token, GIL released. With
  // `all_logits`, every position is evaluated afresh and its logits kept
  // in prompt_logits(). Throws InvalidArgument (empty, too long, bad ids).
  std::span<const float> prefill(const std::vector<int32_t>& tokens, bool all_logits = false);
  // Rows [n, n_vocab] of the last prefill(all_logits): row i follows token i.
  const std::vector<float>& prompt_logits() const { return prompt_logits_; }

  // The sequence generations run on (context shift off: a full context ends
  // them with "length", as llama-cpp-python's).
  runtime::Sequence& sequence();
  runtime::GenerationVocab& vocab() { return *vocab_; }
  // Counts tokens a generation evaluated (feed() through sequence()).
  void count_evaluated(int64_t n) { n_evaluated_ += n; }

  // A copy of the tokens the cache holds. Another Python thread may read it
  // while a generation evaluates with the GIL released: the sequence changes
  // only under cache_mutex(), which this takes (waiting without the GIL).
  std::vector<int32_t> cached_tokens() const;
  std::mutex& cache_mutex() const { return cache_mutex_; }
  // Forgets the cache.
  void reset();
  // Restores a cache holding `tokens` by evaluating them.
  void restore(const std::vector<int32_t>& tokens);
  // The KV state of the cached tokens (runtime/context_state.h's format, the
  // tokens included; empty for an encoder or a GPU-offloaded cache), and its
  // restore: no evaluation.
  // load_state throws FormatError / InvalidArgument for bytes of another
  // model or a damaged state, leaving the cache empty.
  std::string save_state();
  void load_state(std::string_view bytes);
  // Tokens run through the model so far (prompts, generated tokens, restores).
  int64_t n_evaluated() const { return n_evaluated_; }

  // Pooled embeddings of each input, or per-token states when the model
  // pools nothing: [n_inputs][n_tokens_i * n_embd]. Encoders and decoders
  // that give hidden states (their final states after the output norm, as
  // llama.cpp); a decoder's cache is cleared. Inputs longer than one pass
  // are rejected with InvalidArgument.
  std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>>& inputs, bool* per_token);
  // Most tokens one embedding input may have.
  int64_t max_embed_tokens() const;

  // Every generation started bumps the epoch; an older generation that sees
  // a newer epoch stops (another call reused the cache under it).
  uint64_t epoch() const { return epoch_; }
  uint64_t next_epoch() { return ++epoch_; }

  // Whether a call is evaluating (read and written with the GIL held; true
  // while an evaluation runs with the GIL released).
  bool busy() const { return busy_; }

  // Re-entrancy guard (taken with the GIL held).
  class Busy {
   public:
    explicit Busy(Session& s);
    ~Busy() { s_.busy_ = false; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;

   private:
    Session& s_;
  };

 private:
  mutable std::mutex cache_mutex_;  // guards seq_ while the GIL is released
  SessionParams params_;
  std::shared_ptr<const model::Model> model_;  // null: vocab only
  std::unique_ptr<gguf::File> own_file_;       // vocab only: the opened file
  const gguf::File* file_ = nullptr;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<runtime::Context> ctx_;
  std::unique_ptr<runtime::Sequence> seq_;           // sequence 0 of ctx_
  std::unique_ptr<runtime::GenerationVocab> vocab_;
  std::vector<float> prompt_logits_;  // [n, n_vocab]
  uint64_t epoch_ = 0;
  int64_t n_evaluated_ = 0;
  bool busy_ = false;
};

}  // namespace ferrite::python
