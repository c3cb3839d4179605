// A minimal single-sequence driver for Model::forward, independent of
// src/runtime (which has its own tests): one f16 cache, cell i holds
// position i, causal masks. Evaluates a prompt in passes of `n_batch`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/thread_pool.h"
#include "model/model.h"

namespace ferrite::test {

class SingleSequence {
 public:
  SingleSequence(const model::Model& m, int64_t n_ctx, int n_threads)
      : model_(m), n_ctx_(n_ctx), pool_(n_threads) {
    const model::HParams& hp = m.hparams();
    const size_t per_layer = static_cast<size_t>(n_ctx * hp.n_embd_kv());
    k_.assign(static_cast<size_t>(hp.n_layer), std::vector<uint16_t>(per_layer));
    v_.assign(static_cast<size_t>(hp.n_layer), std::vector<uint16_t>(per_layer));
  }

  // Appends tokens; returns the logits of every one: [n, n_vocab].
  std::vector<float> eval(const std::vector<int32_t>& tokens, int64_t n_batch) {
    const model::HParams& hp = model_.hparams();
    std::vector<float> logits(tokens.size() * static_cast<size_t>(hp.n_vocab));
    for (size_t b = 0; b < tokens.size(); b += static_cast<size_t>(n_batch)) {
      const int64_t n = std::min<int64_t>(n_batch, static_cast<int64_t>(tokens.size() - b));
      std::vector<int32_t> pos(static_cast<size_t>(n)), rows(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t) {
        pos[t] = static_cast<int32_t>(n_past_ + t);
        rows[t] = static_cast<int32_t>(t);
      }
      constexpr int64_t kPad = 32;  // as the runtime and llama.cpp pad the scanned cells
      const int64_t n_kv = std::min(n_ctx_, (n_past_ + n + kPad - 1) / kPad * kPad);
      std::vector<float> mask(static_cast<size_t>(n * n_kv), -std::numeric_limits<float>::infinity());
      // ALiBi models: the distance -(pos - cell pos) instead of 0 (backend::AttentionSpec).
      const bool alibi = hp.max_alibi_bias > 0.0f;
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t j = 0; j <= n_past_ + t; ++j) mask[t * n_kv + j] = alibi ? -static_cast<float>(n_past_ + t - j) : 0.0f;
      }
      // Sliding-window layers see the last n_swa positions (as llama.cpp:
      // hidden when pos - cell_pos >= n_swa).
      std::vector<float> mask_swa;
      if (hp.n_swa > 0) {
        mask_swa = mask;
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t j = 0; j <= n_past_ + t; ++j) {
            if (n_past_ + t - j >= hp.n_swa) mask_swa[t * n_kv + j] = -std::numeric_limits<float>::infinity();
          }
        }
      }
      // Chunked-attention layers (llama4) see only their chunk's positions.
      std::vector<float> mask_chunk;
      if (hp.n_chunk > 0) {
        mask_chunk = mask;
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t j = 0; j <= n_past_ + t; ++j) {
            const auto p = static_cast<int32_t>(n_past_ + t);
            if (!backend::in_same_chunk(p, static_cast<int32_t>(j), hp.n_chunk)) {
              mask_chunk[t * n_kv + j] = -std::numeric_limits<float>::infinity();
            }
          }
        }
      }
      model::ForwardBatch fb{tokens.data() + b, pos.data(), n, rows.data(), n};
      model::KvView kv;
      for (size_t il = 0; il < k_.size(); ++il) kv.layers.push_back({k_[il].data(), v_[il].data()});
      kv.slots = pos.data();  // cell i holds position i
      kv.n_cells = n_ctx_;
      kv.n_kv = n_kv;
      kv.mask = mask.data();
      kv.mask_swa = hp.n_swa > 0 ? mask_swa.data() : nullptr;
      kv.mask_chunk = hp.n_chunk > 0 ? mask_chunk.data() : nullptr;
      model_.forward(fb, kv, pool_, ws_, logits.data() + b * static_cast<size_t>(hp.n_vocab));
      n_past_ += n;
    }
    return logits;
  }

  int64_t n_past() const { return n_past_; }

 private:
  const model::Model& model_;
  int64_t n_ctx_;
  int64_t n_past_ = 0;
  cpu::ThreadPool pool_;
  model::Workspace ws_;
  std::vector<std::vector<uint16_t>> k_, v_;
};

}  // namespace ferrite::test
