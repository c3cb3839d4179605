// A double-precision forward of a Llama GGUF (the layout `ferrite convert`
// writes: Q/K rows permuted for adjacent-pair RoPE, tied or separate
// output), from tests/model/ref_common.h's blocks:
//   x = embed(tokens); per layer: x += Wo attn(rope(Wq h), rope(Wk h), Wv h)
//   with h = rms_norm(x) * attn_norm; x += down(silu(gate h') * up h') with
//   h' = rms_norm(x) * ffn_norm; logits = output(rms_norm(x) * output_norm).
// Each of llama.cpp's two conventions can be chosen: f16 rounding (the K/V
// cache, queries and probabilities) and RoPE angles by repeated f32
// multiplication; without them it is transformers' arithmetic in double.
// They tell what part of a difference between ferrite and transformers
// comes from which convention.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/metadata.h"
#include "model/ref_common.h"

namespace ferrite::test {

inline std::vector<double> ref_llama_logits(const gguf::File& f, const std::vector<int32_t>& tokens,
                                            bool llama_cpp_rounding, bool llama_cpp_angles) {
  const gguf::Metadata md(f);
  const int64_t n_embd = static_cast<int64_t>(md.get_uint("llama.embedding_length"));
  const int64_t n_layer = static_cast<int64_t>(md.get_uint("llama.block_count"));
  const int64_t n_head = static_cast<int64_t>(md.get_uint("llama.attention.head_count"));
  const int64_t n_kv = static_cast<int64_t>(md.get_uint("llama.attention.head_count_kv"));
  const int64_t hd = n_embd / n_head;
  const double eps = md.get_float("llama.attention.layer_norm_rms_epsilon");
  const double base = md.opt_float("llama.rope.freq_base").value_or(10000.0f);
  auto w = [&](const std::string& name) {
    const gguf::TensorInfo& t = f.tensor(name);
    std::vector<float> v(t.n_elements);
    std::memcpy(v.data(), t.data, t.n_bytes);
    return v;
  };
  const std::vector<float> embd = w("token_embd.weight");
  const int64_t n_vocab = static_cast<int64_t>(embd.size()) / n_embd;
  const std::vector<float> out_w = f.find_tensor("output.weight") ? w("output.weight") : embd;
  const int64_t n = static_cast<int64_t>(tokens.size());
  std::vector<int32_t> pos(tokens.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
  ref::Rows x(static_cast<size_t>(n * n_embd));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t d = 0; d < n_embd; ++d) x[t * n_embd + d] = embd[tokens[t] * n_embd + d];
  }
  ref::Rope rope{hd, false, base, 1.0, !llama_cpp_angles};
  for (int64_t il = 0; il < n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    ref::Rows h = x;
    ref::rms_norm(h, n_embd, w(p + "attn_norm.weight"), eps);
    ref::Rows q = ref::linear(h, n, w(p + "attn_q.weight"), n_embd, n_head * hd);
    ref::Rows k = ref::linear(h, n, w(p + "attn_k.weight"), n_embd, n_kv * hd);
    const ref::Rows v = ref::linear(h, n, w(p + "attn_v.weight"), n_embd, n_kv * hd);
    ref::rope(q, n, n_head, hd, pos, rope);
    ref::rope(k, n, n_kv, hd, pos, rope);
    const ref::Rows a = ref::attention(q, k, v, pos, n, n_head, n_kv, hd, 1.0 / std::sqrt(static_cast<double>(hd)),
                                       0, llama_cpp_rounding);
    ref::add_inplace(x, ref::linear(a, n, w(p + "attn_output.weight"), n_head * hd, n_embd));
    h = x;
    ref::rms_norm(h, n_embd, w(p + "ffn_norm.weight"), eps);
    const int64_t n_ff = static_cast<int64_t>(f.tensor(p + "ffn_up.weight").ne[1]);
    ref::add_inplace(x, ref::gated_ffn(h, n, n_embd, n_ff, w(p + "ffn_gate.weight").data(),
                                       w(p + "ffn_up.weight").data(), w(p + "ffn_down.weight").data(), ref::silu));
  }
  ref::rms_norm(x, n_embd, w("output_norm.weight"), eps);
  return ref::linear(x, n, out_w, n_embd, n_vocab);
}

}  // namespace ferrite::test
