// The per-head matrices of multi-head latent attention's absorbed form
// (backend::MlaWeights), derived at load from the file's attn_kv_b
// [kv_lora, n_head (nope + v)] (llama.cpp c392e50's layout: per head, nope
// key rows then v value rows, each kv_lora long):
//   W_UK_h^T [kv_lora rows of nope]  -> wk_b [nope, kv_lora, n_head]
//   W_UV_h   [v rows of kv_lora]     -> wv_b [kv_lora, v, n_head]
// F32 when attn_kv_b is F32 (the golden tests' models), else F16 (the
// stored type dequantized: 2 bytes per value, the size of a full-precision
// attn_kv_b once more). The tensors live as long as this object.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/ops.h"
#include "backend/weight.h"
#include "gguf/file.h"
#include "model/weights.h"

namespace ferrite::model {

class AbsorbedKvB {
 public:
  AbsorbedKvB(const backend::Weight& kv_b, int64_t n_head, int64_t nope, int64_t v_dim, int64_t kv_lora);
  AbsorbedKvB(const AbsorbedKvB&) = delete;
  AbsorbedKvB& operator=(const AbsorbedKvB&) = delete;

  backend::Weight wk_b() const { return backend::Weight{&k_info_}; }
  backend::Weight wv_b() const { return backend::Weight{&v_info_}; }

 private:
  gguf::TensorInfo k_info_, v_info_;
  std::vector<uint8_t> k_data_, v_data_;
};

// One layer's latent attention as llama.cpp's files store it: attn_q
// [n_embd, n_head (nope + rope)], or the low-rank attn_q_a [n_embd, q_lora],
// attn_q_a_norm and attn_q_b [q_lora, n_head (nope + rope)]; attn_kv_a_mqa
// [n_embd, kv_lora + rope], attn_kv_a_norm, attn_kv_b (absorbed: the object
// keeps the derived matrices) and attn_output [n_head v, n_embd]. q_lora is
// read from the file only when attn_q is absent. ModelError names a missing
// or misshapen tensor. (deepseek2, minicpm3)
struct MlaLayer {
  backend::MlaWeights w;
  std::unique_ptr<AbsorbedKvB> absorbed;
};
MlaLayer bind_mla_layer(const WeightBinder& b, int64_t il, int64_t n_embd, const backend::MlaSpec& dims,
                        int64_t q_lora);

}  // namespace ferrite::model
