#include "model/mla_absorb.h"

#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/dequantize.h"

namespace ferrite::model {
namespace {

gguf::TensorInfo derived(const std::string& name, TensorType type, int64_t ne0, int64_t ne1, int64_t ne2,
                         std::vector<uint8_t>& data) {
  gguf::TensorInfo t;
  t.name = name;
  t.type = type;
  t.n_dims = 3;
  t.ne = {ne0, ne1, ne2, 1};
  t.n_elements = static_cast<uint64_t>(ne0 * ne1 * ne2);
  t.n_bytes = t.n_elements * (type == TensorType::F32 ? 4u : 2u);
  data.assign(t.n_bytes, 0);
  t.data = data.data();
  return t;
}

void put(uint8_t* base, TensorType type, int64_t i, float v) {
  if (type == TensorType::F32) {
    std::memcpy(base + i * 4, &v, 4);
  } else {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(base + i * 2, &h, 2);
  }
}

}  // namespace

AbsorbedKvB::AbsorbedKvB(const backend::Weight& kv_b, int64_t n_head, int64_t nope, int64_t v_dim, int64_t kv_lora) {
  const gguf::TensorInfo& src = *kv_b.info;
  if (src.ne[0] != kv_lora || src.ne[1] != n_head * (nope + v_dim) || src.data == nullptr) {
    throw ModelError(src.name + ": shape " + src.shape_string() + " is not [kv_lora_rank, n_head (nope + v)]");
  }
  const TensorType type = src.type == TensorType::F32 ? TensorType::F32 : TensorType::F16;
  k_info_ = derived(src.name + "(W_UK^T)", type, nope, kv_lora, n_head, k_data_);
  v_info_ = derived(src.name + "(W_UV)", type, kv_lora, v_dim, n_head, v_data_);
  std::vector<float> row(static_cast<size_t>(kv_lora));
  const uint64_t row_bytes = src.row_bytes();
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t r = 0; r < nope + v_dim; ++r) {
      quant::dequantize_row(src.type, src.data + static_cast<uint64_t>(h * (nope + v_dim) + r) * row_bytes,
                            row.data(), kv_lora);
      for (int64_t c = 0; c < kv_lora; ++c) {
        if (r < nope) {
          put(k_data_.data(), type, (h * kv_lora + c) * nope + r, row[c]);  // [h][c][i]
        } else {
          put(v_data_.data(), type, (h * v_dim + (r - nope)) * kv_lora + c, row[c]);  // [h][j][c]
        }
      }
    }
  }
}

MlaLayer bind_mla_layer(const WeightBinder& b, int64_t il, int64_t n_embd, const backend::MlaSpec& d,
                        int64_t q_lora) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t H = d.n_head, qk = d.nope + d.n_rot;
  MlaLayer L;
  backend::MlaWeights& a = L.w;
  if (b.file().find_tensor(name("attn_q.weight")) != nullptr) {
    a.wq = b.require(name("attn_q.weight"), {n_embd, H * qk});
  } else {
    a.wq_a = b.require(name("attn_q_a.weight"), {n_embd, q_lora});
    a.q_a_norm = b.require_vec(name("attn_q_a_norm.weight"), q_lora);
    a.wq_b = b.require(name("attn_q_b.weight"), {q_lora, H * qk});
  }
  a.wkv_a = b.require(name("attn_kv_a_mqa.weight"), {n_embd, d.kv_lora + d.n_rot});
  a.kv_a_norm = b.require_vec(name("attn_kv_a_norm.weight"), d.kv_lora);
  L.absorbed = std::make_unique<AbsorbedKvB>(b.require(name("attn_kv_b.weight"), {d.kv_lora, H * (d.nope + d.v_dim)}),
                                             H, d.nope, d.v_dim, d.kv_lora);
  a.wk_b = L.absorbed->wk_b();
  a.wv_b = L.absorbed->wv_b();
  a.wo = b.require(name("attn_output.weight"), {H * d.v_dim, n_embd});
  return L;
}

}  // namespace ferrite::model
