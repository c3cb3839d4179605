// Context's embeddings for decoders (set_embeddings): output rows keep the
// final hidden states instead of logits, pooled per sequence when the model
// pools. Shared with the encoder path: pooling of the kept states.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "model/pooling.h"
#include "runtime/context.h"

namespace ferrite::runtime {

void Context::set_embeddings(bool on) {
  if (on && !model_->arch().is_encoder()) {
    if (!model_->arch().has_hidden_states()) {
      throw InvalidArgument("embeddings are not supported for " + model_->hparams().arch +
                            " models (their forward pass gives no hidden states)");
    }
  }
  embeddings_ = on;
  n_out_ = 0;  // what the last decode kept is of the other kind
  states_.clear();
  pooled_.clear();
}

model::Pooling Context::pooling() const {
  switch (params_.pooling_type) {
    case -1: return model_->hparams().pooling;
    case 0: return model::Pooling::None;
    case 1: return model::Pooling::Mean;
    case 2: return model::Pooling::Cls;
    case 3: return model::Pooling::Last;
    case 4:
      // A score from the model's classification head, which only a reranker's file has.
      if (model_->hparams().pooling != model::Pooling::Rank) {
        throw InvalidArgument("pooling type 4 (rank) needs a reranker: a model whose file says pooling_type 4 and "
                              "holds a classification head; " + model_->hparams().arch + " model here has none");
      }
      return model::Pooling::Rank;
    default:
      throw InvalidArgument("pooling type " + std::to_string(params_.pooling_type) +
                            " is not supported (-1 the model's, 0 none, 1 mean, 2 cls, 3 last, 4 rank)");
  }
}

bool Context::is_output(const Batch& batch, int64_t i) const {
  // A pooled embedding needs the state of every token.
  return batch.want_logits[static_cast<size_t>(i)] != 0 || (embeddings_ && pooling() != model::Pooling::None);
}

void Context::forward_outputs(const model::ForwardBatch& fb, const model::KvView& kv) {
  if (!embeddings_) {
    model::run_step(model_->arch(), *placement_, fb, kv, logits_.data() + n_out_ * n_vocab());  // [n_out, n_vocab]
    return;
  }
  const int64_t n_embd = model_->hparams().n_embd;
  model::run_step(model_->arch(), *placement_, fb, kv, /*logits=*/nullptr,
                  states_.data() + n_out_ * n_embd);  // [n_out, n_embd]
}

void Context::pool_sequences(const Batch& batch) {
  const model::Pooling kind = pooling();
  const int64_t n = batch.size(), n_embd = model_->hparams().n_embd;
  pooled_.assign(static_cast<size_t>(kMaxSequences), {});
  if (kind == model::Pooling::None) return;
  // Pooling makes every token an output, so state row i is batch token i.
  // Each sequence's rows in position order, pooled.
  for (int seq = 0; seq < kMaxSequences; ++seq) {
    std::vector<int32_t> mine;
    for (int64_t i = 0; i < n; ++i) {
      if (batch.seq[static_cast<size_t>(i)] == seq) mine.push_back(static_cast<int32_t>(i));
    }
    if (mine.empty()) continue;
    std::stable_sort(mine.begin(), mine.end(), [&](int32_t a, int32_t b) {
      return batch.pos[static_cast<size_t>(a)] < batch.pos[static_cast<size_t>(b)];
    });
    std::vector<float>& out = pooled_[static_cast<size_t>(seq)];
    out.resize(static_cast<size_t>(n_embd));
    model::pool_sequence(kind, states_.data(), mine.data(), static_cast<int64_t>(mine.size()), n_embd,
                         out.data());
  }
}

}  // namespace ferrite::runtime
