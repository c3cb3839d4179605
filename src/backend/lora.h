// LoRA adapters as the backends see them: y = W x + s B (A x) for every
// weight product whose weight an active adapter adapts. The model's
// adapters (model/lora_adapter.h) give each adapted tensor its pair A, B;
// the runtime gives a step the scale of each adapter for each token (so
// that sequences of one batch use different adapter sets: the products mix
// them, token by token). Each backend adds the terms in its one product
// function (CPU: CpuBackend::product, CUDA: CudaBackend::lora_add), so
// every architecture gets them with nothing of its own.
//
// Scale, as llama.cpp's: s = user_scale * alpha / r (r: B's ne[0]), or the
// user's scale alone when the adapter has no alpha (alpha == 0).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "backend/weight.h"

namespace ferrite::backend {

// One adapted tensor of one adapter: A with ne [n_in, r] (r rows of n_in),
// B with ne [r, n_out] (n_out rows of r), as llama.cpp stores them.
struct LoraWeight {
  const gguf::TensorInfo* base = nullptr;  // the model's tensor it adapts
  Weight a, b;
  float alpha = 0.0f;                      // the adapter's adapter.lora.alpha (0: none)
  int64_t rank() const { return a.rows(); }
  // The factor a token's user scale s takes: s * alpha / r (llama.cpp's order), or s.
  float scale(float s) const { return alpha != 0.0f ? s * alpha / static_cast<float>(rank()) : s; }
};

// The terms of one base tensor: (adapter index, its pair).
struct LoraTerm {
  int adapter = 0;
  const LoraWeight* w = nullptr;
};
using LoraTable = std::unordered_map<const gguf::TensorInfo*, std::vector<LoraTerm>>;

// The adapters of one step. A product of n_tokens rows reads the tokens'
// scales; a product of n_out < n_tokens rows (the output head over the
// gathered rows) the output rows'.
struct LoraStep {
  const LoraTable* table = nullptr;
  int n_adapters = 0;
  const float* token_scales = nullptr;  // [n_adapters, n_tokens] user scales (0: adapter off for that token)
  const float* out_scales = nullptr;    // [n_adapters, n_out]
  const uint8_t* active = nullptr;      // [n_adapters] some token has a non-zero scale

  // The terms of w whose adapter some token of the step uses.
  std::vector<LoraTerm> terms(const Weight& w) const {
    std::vector<LoraTerm> out;
    if (table == nullptr || !w) return out;
    const auto it = table->find(w.info);
    if (it == table->end()) return out;
    for (const LoraTerm& t : it->second) {
      if (active[t.adapter]) out.push_back(t);
    }
    return out;
  }
  // Adapter i's user scales for a product of `rows` rows (n_tokens or n_out), or null.
  const float* scales(int adapter, int64_t rows, int64_t n_tokens, int64_t n_out) const {
    if (rows == n_tokens) return token_scales + adapter * n_tokens;
    if (rows == n_out) return out_scales + adapter * n_out;
    return nullptr;
  }
};

}  // namespace ferrite::backend
