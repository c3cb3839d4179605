// Context's path for encoders (bert): one forward pass over whole
// sequences, hidden states kept, pooled per sequence.
#include <algorithm>
#include <numeric>
#include <string>

#include "core/error.h"
#include "model/pooling.h"
#include "runtime/context.h"

namespace ferrite::runtime {

void Context::encode(const Batch& batch) {
  const model::HParams& hp = model_->hparams();
  const int64_t n = batch.size(), n_embd = hp.n_embd;
  if (n > params_.n_batch) {
    throw InvalidArgument("an embedding model evaluates a batch in one pass: " + std::to_string(n) +
                          " tokens exceed the batch size " + std::to_string(params_.n_batch));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (batch.seq[i] < 0 || batch.seq[i] >= kMaxSequences) {
      throw InvalidArgument("sequence id " + std::to_string(batch.seq[i]) + " out of range 0.." +
                            std::to_string(kMaxSequences - 1));
    }
  }
  const bool rank = pooling() == model::Pooling::Rank;
  std::vector<int32_t> rows(static_cast<size_t>(n));
  std::iota(rows.begin(), rows.end(), 0);
  if (rank) rows = first_rows(batch);
  model::ForwardBatch fb;
  fb.tokens = batch.tokens.data();
  fb.pos = batch.pos.data();
  fb.n_tokens = n;
  fb.out_rows = rows.data();
  fb.n_out = static_cast<int64_t>(rows.size());
  fb.seq = batch.seq.data();
  fb.types = batch.types.empty() ? nullptr : batch.types.data();
  fb.classify = rank;
  states_.resize(static_cast<size_t>(n * n_embd));
  pooled_.clear();
  n_out_ = 0;
  const model::KvView no_cache;
  model::run_step(model_->arch(), *placement_, fb, no_cache, states_.data());  // [n, n_embd], rank: [n_seq, 1]
  if (!rank) {
    pool_sequences(batch);
    return;
  }
  // One score per sequence (llama.cpp's float[1] of llama_get_embeddings_seq);
  // no token states are kept.
  pooled_.assign(static_cast<size_t>(kMaxSequences), {});
  for (size_t k = 0; k < rows.size(); ++k) {
    pooled_[static_cast<size_t>(batch.seq[static_cast<size_t>(rows[k])])] = {states_[k]};
  }
  states_.clear();
}

void Context::check_token_types(const Batch& batch) const {
  const int64_t n_types = model_->arch().is_encoder() ? model_->hparams().n_token_types : 0;
  for (const int32_t t : batch.types) {
    if (t == 0 || (t > 0 && t < n_types)) continue;
    if (n_types <= 1) {
      throw InvalidArgument("token type " + std::to_string(t) + " given, but the " + model_->hparams().arch +
                            " model has " + (n_types == 1 ? "one token type (0)" : "no token types"));
    }
    throw InvalidArgument("token type " + std::to_string(t) + " is outside the model's token types (0.." +
                          std::to_string(n_types - 1) + ")");
  }
}

std::vector<int32_t> Context::first_rows(const Batch& batch) {
  // Each sequence's token of the lowest position (its first, llama.cpp's
  // position 0), in ascending row order as ForwardBatch::out_rows must be.
  std::vector<int32_t> first(static_cast<size_t>(kMaxSequences), -1);
  for (int64_t i = 0; i < batch.size(); ++i) {
    int32_t& f = first[static_cast<size_t>(batch.seq[static_cast<size_t>(i)])];
    if (f < 0 || batch.pos[static_cast<size_t>(i)] < batch.pos[static_cast<size_t>(f)]) f = static_cast<int32_t>(i);
  }
  std::vector<int32_t> rows;
  for (int32_t f : first) {
    if (f >= 0) rows.push_back(f);
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::span<const float> Context::embeddings(int seq) const {
  if (!model_->arch().is_encoder() && !embeddings_) {
    throw InvalidArgument("the context is not in embeddings mode (set_embeddings)");
  }
  if (pooling() == model::Pooling::None) {
    throw InvalidArgument("the model has no pooling; use token_embeddings()");
  }
  if (seq < 0 || seq >= static_cast<int>(pooled_.size()) || pooled_[static_cast<size_t>(seq)].empty()) {
    throw InvalidArgument("no embedding for sequence " + std::to_string(seq));
  }
  return pooled_[static_cast<size_t>(seq)];
}

std::span<const float> Context::token_embeddings(int64_t i) const {
  const int64_t n_embd = model_->hparams().n_embd;
  if (i < 0 || (i + 1) * n_embd > static_cast<int64_t>(states_.size())) {
    throw InvalidArgument("no token embedding " + std::to_string(i));
  }
  return {states_.data() + i * n_embd, static_cast<size_t>(n_embd)};
}

}  // namespace ferrite::runtime
