#include "session.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>
#include <string>

#include "core/error.h"
#include "model/lora_adapter.h"
#include "runtime/kv_cache.h"
#include "runtime/offload.h"

namespace ferrite::python {

namespace py = pybind11;

Session::Busy::Busy(Session& s) : s_(s) {
  if (s_.busy_) throw InvalidArgument("this Llama is already evaluating in another thread");
  s_.busy_ = true;
}

Session::Session(const SessionParams& params) : params_(params) {
  if (params_.n_ctx < 0) throw InvalidArgument("n_ctx must not be negative, got " + std::to_string(params_.n_ctx));
  if (params_.n_batch <= 0) throw InvalidArgument("n_batch must be positive, got " + std::to_string(params_.n_batch));
  if (params_.n_gpu_layers < runtime::kAllLayers) {
    throw InvalidArgument("n_gpu_layers must be -1 (all) or more, got " + std::to_string(params_.n_gpu_layers));
  }
  if (params_.n_threads < 0) {
    throw InvalidArgument("n_threads must not be negative, got " + std::to_string(params_.n_threads));
  }
  {
    py::gil_scoped_release nogil;  // mapping and binding a large model takes a while
    if (params_.vocab_only) {
      own_file_ = std::make_unique<gguf::File>(gguf::File::open(params_.model_path));
      file_ = own_file_.get();
    } else {
      model_ = model::Model::load(params_.model_path);
      file_ = &model_->file();
    }
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(*file_));
  }
  vocab_ = std::make_unique<runtime::GenerationVocab>(*tok_);
  if (params_.vocab_only) return;
  runtime::ContextParams cp;
  cp.n_ctx = params_.n_ctx;
  cp.n_batch = params_.n_batch;
  cp.n_threads = params_.n_threads;
  if (runtime::gpu_offload_available()) cp.n_gpu_layers = params_.n_gpu_layers;
  cp.pooling_type = params_.pooling_type;
  if (!params_.lora_path.empty()) {
    cp.lora.push_back(model::LoraAdapter::load(params_.lora_path, *model_));
    cp.lora_scales.push_back(params_.lora_scale);
  }
  ctx_ = std::make_unique<runtime::Context>(model_, cp);
  ctx_->pooling();  // a bad pooling_type fails here, not at the first embedding
  seq_ = std::make_unique<runtime::Sequence>(
      *ctx_, runtime::SequenceParams{.context_shift = false, .prefill_chunk = params_.n_batch});
}

const model::Model& Session::model() const {
  if (!model_) throw InvalidArgument("this Llama was opened with vocab_only=True: it has no weights");
  return *model_;
}

runtime::Context& Session::context() {
  if (!ctx_) throw InvalidArgument("this Llama was opened with vocab_only=True: it has no context");
  return *ctx_;
}

std::vector<int32_t> Session::tokenize(const std::string& text, bool add_bos, bool special) const {
  return tok_->encode(text, add_bos, special);
}

std::string Session::detokenize(const std::vector<int32_t>& tokens, bool special) const {
  std::string out;
  for (int32_t id : tokens) {
    if (id < 0 || id >= tok_->n_vocab()) {
      throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                            std::to_string(tok_->n_vocab() - 1) + ")");
    }
    out += tok_->token_to_piece(id, special);
  }
  return out;
}

runtime::Sequence& Session::sequence() {
  context();  // vocab only: no
  return *seq_;
}

std::vector<int32_t> Session::cached_tokens() const {
  std::unique_lock<std::mutex> lock(cache_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) {
    py::gil_scoped_release nogil;  // the evaluating thread may need the GIL after it unlocks
    lock.lock();
  }
  return seq_ ? seq_->cached() : std::vector<int32_t>{};
}

std::span<const float> Session::prefill(const std::vector<int32_t>& tokens, bool all_logits) {
  if (is_encoder()) throw InvalidArgument("this model is an encoder: it computes embeddings, not text");
  context();  // vocab only: no
  if (tokens.empty()) throw InvalidArgument("the prompt has no tokens");
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n > ctx_->n_ctx()) {
    throw InvalidArgument("Requested tokens (" + std::to_string(n) + ") exceed context window of " +
                          std::to_string(ctx_->n_ctx()));
  }
  py::gil_scoped_release nogil;
  const std::lock_guard<std::mutex> lock(cache_mutex_);
  if (!all_logits) {
    runtime::PrefillStats stats;
    const std::span<const float> logits = seq_->prefill(tokens, &stats);
    n_evaluated_ += stats.n_evaluated;
    return logits;
  }
  // Every position's logits: the whole prompt evaluated afresh.
  seq_->clear();
  std::span<const float> logits;
  try {
    logits = ctx_->eval(tokens, /*seq=*/0, /*all_logits=*/true);
  } catch (...) {
    seq_->clear();  // a failed pass may leave part of the prompt
    throw;
  }
  n_evaluated_ += n;
  seq_->assume(tokens);
  prompt_logits_.assign(logits.begin(), logits.end());
  const size_t nv = static_cast<size_t>(ctx_->n_vocab());
  return {prompt_logits_.data() + prompt_logits_.size() - nv, nv};
}

void Session::reset() {
  if (ctx_) ctx_->clear();
  if (seq_) seq_->clear();
  prompt_logits_.clear();
  ++epoch_;
}

void Session::restore(const std::vector<int32_t>& tokens) {
  reset();
  if (tokens.empty() || is_encoder()) return;
  prefill(tokens);
}

int64_t Session::max_embed_tokens() const {
  model();  // vocab only: no
  if (!is_encoder()) return std::min(params_.n_batch, ctx_->n_ctx());  // one decode through the cache
  const int64_t train = model().hparams().n_ctx_train;
  return train > 0 ? std::min(train, params_.n_batch) : params_.n_batch;
}

namespace {

// A decoder's context in embeddings mode for the length of one embed() call:
// the cache starts and ends empty (as llama-cpp-python, which clears it).
class EmbeddingsMode {
 public:
  explicit EmbeddingsMode(runtime::Context& ctx) : ctx_(ctx) {
    ctx_.set_embeddings(true);  // throws for architectures without hidden states
    ctx_.clear();
  }
  ~EmbeddingsMode() {
    ctx_.clear();
    ctx_.set_embeddings(false);
  }
  EmbeddingsMode(const EmbeddingsMode&) = delete;
  EmbeddingsMode& operator=(const EmbeddingsMode&) = delete;

 private:
  runtime::Context& ctx_;
};

}  // namespace

std::vector<std::vector<float>> Session::embed(const std::vector<std::vector<int32_t>>& inputs, bool* per_token) {
  context();  // vocab only: no
  const int64_t limit = max_embed_tokens();
  for (const auto& in : inputs) {
    if (in.empty()) throw InvalidArgument("an embedding input has no tokens");
    if (static_cast<int64_t>(in.size()) > limit) {
      throw InvalidArgument("an embedding input has " + std::to_string(in.size()) + " tokens, more than the " +
                            std::to_string(limit) + " one pass holds");
    }
  }
  std::optional<EmbeddingsMode> mode;
  if (!is_encoder()) {
    reset();  // the cache no longer holds the cached tokens
    mode.emplace(*ctx_);
  }
  const bool pooled = ctx_->pooling() != model::Pooling::None;
  *per_token = !pooled;
  const size_t n_embd = static_cast<size_t>(model_->hparams().n_embd);
  std::vector<std::vector<float>> out(inputs.size());
  runtime::Batch batch;
  size_t first = 0;  // first input of the current batch
  auto run = [&](size_t end) {
    {
      py::gil_scoped_release nogil;
      ctx_->decode(batch);
    }
    n_evaluated_ += batch.size();
    int64_t row = 0;
    for (size_t i = first; i < end; ++i) {
      const int seq = static_cast<int>(i - first);
      if (pooled) {
        const std::span<const float> e = ctx_->embeddings(seq);
        out[i].assign(e.begin(), e.end());
      } else {
        out[i].reserve(inputs[i].size() * n_embd);
        for (size_t t = 0; t < inputs[i].size(); ++t) {
          const std::span<const float> e = ctx_->token_embeddings(row++);
          out[i].insert(out[i].end(), e.begin(), e.end());
        }
      }
    }
    batch.clear();
    first = end;
    if (mode) ctx_->clear();  // the next batch's sequences start afresh
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool full_tokens = batch.size() + static_cast<int64_t>(inputs[i].size()) > limit;
    const bool full_seqs = static_cast<int64_t>(i - first) >= runtime::kMaxSequences;
    if (batch.size() > 0 && (full_tokens || full_seqs)) run(i);
    const int seq = static_cast<int>(i - first);
    for (size_t t = 0; t < inputs[i].size(); ++t) {
      batch.add(inputs[i][t], static_cast<int32_t>(t), seq, true);
    }
  }
  if (batch.size() > 0) run(inputs.size());
  return out;
}

std::string Session::save_state() {
  context();  // vocab only: no
  // An encoder keeps no cache; an offloaded cache lives on the GPU, which
  // the runtime does not save: the empty state is restored by evaluation.
  if (is_encoder() || (runtime::gpu_offload_available() && params_.n_gpu_layers != 0)) return {};
  return ctx_->save_sequence_bytes(0, seq_->cached());
}

void Session::load_state(std::string_view bytes) {
  context();
  reset();
  if (is_encoder() || bytes.empty()) return;
  std::vector<int32_t> tokens = ctx_->load_sequence_bytes(0, bytes);  // on failure the sequence is left empty
  if (static_cast<int64_t>(tokens.size()) != ctx_->cache().max_pos(0) + 1) {
    // The runtime accepts a state without its tokens; a Llama needs them.
    reset();
    throw InvalidArgument("the state does not hold the tokens of its cache");
  }
  seq_->assume(std::move(tokens));
}

}  // namespace ferrite::python
