// A weight as the backends receive it: a tensor of the memory-mapped GGUF
// file (its type, shape and bytes) and, where the CPU repacked it at load,
// the repacked copy (model/packed_weights.h). Architectures bind weights by
// name and shape (model/weights.h); each backend reads them in its own way:
// the CPU where they are, the GPU from its device copy, made on first use.
#pragma once

#include <cstdint>

#include "gguf/file.h"

namespace ferrite::backend {

struct Weight {
  const gguf::TensorInfo* info = nullptr;  // null: an optional tensor that is absent
  const uint8_t* packed = nullptr;          // the CPU's repacked copy, or null

  explicit operator bool() const { return info != nullptr; }
  int64_t ne(int i) const { return info->ne[static_cast<size_t>(i)]; }
  // Elements per row and rows (a 3-D expert tensor [k, n, n_expert] has n * n_expert rows).
  int64_t cols() const { return info->ne[0]; }
  int64_t rows() const { return info->ne[1] * info->ne[2] * info->ne[3]; }
  TensorType type() const { return info->type; }
  // The data as f32 (norm weights and biases; the type was checked at bind).
  const float* f32() const { return reinterpret_cast<const float*>(info->data); }
};

// A normalisation's weight and (optional) bias.
struct Norm {
  Weight w, b;
};

// Self-attention of one layer: separate or fused Q/K/V projections, their
// optional biases, optional per-head RMSNorm of q and k, the output projection.
struct AttentionWeights {
  Weight wq, wk, wv;        // separate projections, or
  Weight wqkv;              // one fused [n_embd, n_q + 2 n_kv]
  Weight bq, bk, bv, bqkv;  // biases (optional)
  Weight q_norm, k_norm;    // RMSNorm weights (optional): [head_dim] per head, or
                            // [n_q] / [n_kv] over the whole projection (olmo2, olmoe)
  Weight wo, bo;
};

// A feed-forward block's matrices and optional biases (gate may be null).
struct FfnWeights {
  Weight gate, up, down;
  Weight gate_b, up_b, down_b;
};

// A mixture-of-experts feed-forward: router, stacked experts, optional
// shared expert with its optional sigmoid gate.
struct MoeWeights {
  Weight gate_inp;                       // router [n_embd, n_expert]
  Weight gate_exps, up_exps, down_exps;  // [n_embd, n_ff, n_expert], [n_ff, n_embd, n_expert]
  bool norm_weights = true;              // renormalise the selected experts' probabilities
  Weight shexp_gate_inp;                 // shared expert's sigmoid gate [n_embd] (optional)
  FfnWeights shexp;                      // shared expert (optional)
};

}  // namespace ferrite::backend
