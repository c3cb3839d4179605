#include "model/rwkv_block.h"

#include <string>

#include "core/error.h"
#include "gguf/metadata.h"

namespace ferrite::model {
namespace {

int64_t rank_key(const gguf::Metadata& md, const char* suffix, bool required) {
  const std::string k = md.arch_key(suffix);
  const auto v = md.opt_uint(k);
  if (!v) {
    if (required) throw ModelError(md.file().path() + ": required key " + k + " is missing");
    return 0;
  }
  if (*v == 0 || *v > (uint64_t{1} << 20)) {
    throw ModelError(md.file().path() + ": " + k + " = " + std::to_string(*v) + " is out of range");
  }
  return static_cast<int64_t>(*v);
}

void require_f32(const WeightBinder& b, const Tensor& t) {
  if (t && t.type() != TensorType::F32) {
    throw ModelError(b.file().path() + ": " + t.info->name + " must be F32, is " + tensor_type_name(t.type()));
  }
}

// The stacked token-shift mixes [n_embd, 1, 1, count] as `count` vectors.
void bind_fused_lerp(const WeightBinder& b, int64_t il, int64_t n_embd, int64_t count, RwkvWeights& w,
                     WeightSlices& slices) {
  const Tensor f = b.require(WeightBinder::layer_name(il, "time_mix_lerp_fused.weight"), {n_embd, 1, 1, count});
  require_f32(b, f);
  for (int64_t j = 0; j < count; ++j) w.lerp[j] = slices.slice(f, j, count);
}

void bind_channel_mix(const WeightBinder& b, const HParams& hp, int64_t il, bool receptance, RwkvWeights& w) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t e = hp.n_embd;
  if (hp.n_ff <= 0) throw ModelError(b.file().path() + ": RWKV needs feed_forward_length");
  w.cm_lerp_k = b.require_vec(name("channel_mix_lerp_k.weight"), e);
  w.cm_key = b.require(name("channel_mix_key.weight"), {e, hp.n_ff});
  w.cm_value = b.require(name("channel_mix_value.weight"), {hp.n_ff, e});
  if (receptance) {
    w.cm_lerp_r = b.require_vec(name("channel_mix_lerp_r.weight"), e);
    w.cm_receptance = b.require(name("channel_mix_receptance.weight"), {e, e});
  }
}

void bind_common(const WeightBinder& b, const HParams& hp, int64_t il, RwkvWeights& w) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t e = hp.n_embd;
  w.key = b.require(name("time_mix_key.weight"), {e, e});
  w.value = b.require(name("time_mix_value.weight"), {e, e});
  w.receptance = b.require(name("time_mix_receptance.weight"), {e, e});
  w.output = b.require(name("time_mix_output.weight"), {e, e});
  w.ln = b.require_vec(name("time_mix_ln.weight"), e);
  w.ln_b = b.require_vec(name("time_mix_ln.bias"), e);
}

}  // namespace

Tensor WeightSlices::slice(const Tensor& t, int64_t j, int64_t count) {
  const gguf::TensorInfo& src = *t.info;
  const int64_t rows = t.rows() / count;
  gguf::TensorInfo& s = infos_.emplace_back(src);
  const uint64_t bytes = src.row_bytes() * static_cast<uint64_t>(rows);
  s.name = src.name + "[" + std::to_string(j) + "]";
  s.n_dims = 2;
  s.ne = {src.ne[0], rows, 1, 1};
  s.n_elements = static_cast<uint64_t>(src.ne[0] * rows);
  s.n_bytes = bytes;
  s.offset = src.offset + bytes * static_cast<uint64_t>(j);
  s.data = src.data != nullptr ? src.data + bytes * static_cast<uint64_t>(j) : nullptr;
  return Tensor{&s, nullptr};
}

Rwkv6Dims read_rwkv6_dims(const gguf::File& file, const HParams& /*hp*/) {
  const gguf::Metadata md(file);
  Rwkv6Dims d;
  d.mix_extra = rank_key(md, "time_mix_extra_dim", true);
  d.decay_extra = rank_key(md, "time_decay_extra_dim", true);
  d.rescale_every = static_cast<int64_t>(md.opt_uint(md.arch_key("rescale_every_n_layers")).value_or(0));
  return d;
}

namespace {

// rwkv6's and rwkv6qwen2's data-dependent mixes and decay.
void bind_rwkv6_mixes(const WeightBinder& b, const HParams& hp, const Rwkv6Dims& d, int64_t il, WeightSlices& slices,
                      bool fused_only, RwkvWeights& w) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t e = hp.n_embd;
  w.lerp_x = b.require_vec(name("time_mix_lerp_x.weight"), e);
  if (fused_only || b.file().find_tensor(name("time_mix_lerp_fused.weight")) != nullptr) {
    bind_fused_lerp(b, il, e, 5, w, slices);
  } else {  // older files: one tensor per mix
    const char* each[5] = {"time_mix_lerp_w.weight", "time_mix_lerp_k.weight", "time_mix_lerp_v.weight",
                           "time_mix_lerp_r.weight", "time_mix_lerp_g.weight"};
    for (int j = 0; j < 5; ++j) w.lerp[j] = b.require_vec(name(each[j]), e);
  }
  w.w1 = b.require(name("time_mix_w1.weight"), {e, 5 * d.mix_extra});
  const Tensor w2 = b.require(name("time_mix_w2.weight"), {d.mix_extra, e, 5});
  for (int j = 0; j < 5; ++j) w.w2[j] = slices.slice(w2, j, 5);
  w.decay = b.require_vec(name("time_mix_decay.weight"), e);
  w.decay_w1 = b.require(name("time_mix_decay_w1.weight"), {e, d.decay_extra});
  w.decay_w2 = b.require(name("time_mix_decay_w2.weight"), {d.decay_extra, e});
  w.gate = b.require(name("time_mix_gate.weight"), {e, e});
}

}  // namespace

RwkvWeights bind_rwkv6_layer(const WeightBinder& b, const HParams& hp, const Rwkv6Dims& d, int64_t il,
                             WeightSlices& slices) {
  const int64_t e = hp.n_embd, hs = hp.rwkv_head_size;
  RwkvWeights w;
  bind_rwkv6_mixes(b, hp, d, il, slices, /*fused_only=*/false, w);
  w.first = b.require(WeightBinder::layer_name(il, "time_mix_first.weight"), {hs, e / hs});
  require_f32(b, w.first);
  bind_common(b, hp, il, w);
  bind_channel_mix(b, hp, il, /*receptance=*/true, w);
  return w;
}

RwkvWeights bind_rwkv6qwen2_layer(const WeightBinder& b, const HParams& hp, const Rwkv6Dims& d, int64_t kv_heads,
                                  int64_t il, WeightSlices& slices) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t e = hp.n_embd, kv = kv_heads * hp.rwkv_head_size;
  RwkvWeights w;
  bind_rwkv6_mixes(b, hp, d, il, slices, /*fused_only=*/true, w);
  if (b.file().find_tensor(name("time_mix_first.weight")) != nullptr) {
    throw ModelError(b.file().path() + ": rwkv6qwen2 with time_mix_first is not supported");
  }
  w.key = b.require(name("time_mix_key.weight"), {e, kv});
  w.value = b.require(name("time_mix_value.weight"), {e, kv});
  w.receptance = b.require(name("time_mix_receptance.weight"), {e, e});
  w.key_b = b.optional_vec(name("time_mix_key.bias"), kv);
  w.value_b = b.optional_vec(name("time_mix_value.bias"), kv);
  w.receptance_b = b.optional_vec(name("time_mix_receptance.bias"), e);
  w.output = b.require(name("time_mix_output.weight"), {e, e});
  return w;
}

Rwkv7Dims read_rwkv7_dims(const gguf::File& file, const HParams& /*hp*/) {
  const gguf::Metadata md(file);
  Rwkv7Dims d;
  d.decay = rank_key(md, "attention.decay_lora_rank", true);
  d.iclr = rank_key(md, "attention.iclr_lora_rank", true);
  d.value_mix = rank_key(md, "attention.value_residual_mix_lora_rank", true);
  d.gate = rank_key(md, "attention.gate_lora_rank", false);
  return d;
}

RwkvWeights bind_rwkv7_layer(const WeightBinder& b, const HParams& hp, const Rwkv7Dims& d, int64_t il,
                             WeightSlices& slices) {
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t e = hp.n_embd, hs = hp.rwkv_head_size;
  RwkvWeights w;
  bind_fused_lerp(b, il, e, d.gate > 0 ? 6 : 5, w, slices);
  w.w0 = b.require_vec(name("time_mix_w0.weight"), e);
  w.d1 = b.require(name("time_mix_w1.weight"), {e, d.decay});
  w.d2 = b.require(name("time_mix_w2.weight"), {d.decay, e});
  w.a0 = b.require_vec(name("time_mix_a0.weight"), e);
  w.a1 = b.require(name("time_mix_a1.weight"), {e, d.iclr});
  w.a2 = b.require(name("time_mix_a2.weight"), {d.iclr, e});
  if (il > 0) {  // layer 0's value residual is unused (its values are the residual)
    w.v0 = b.require_vec(name("time_mix_v0.weight"), e);
    w.v1 = b.require(name("time_mix_v1.weight"), {e, d.value_mix});
    w.v2 = b.require(name("time_mix_v2.weight"), {d.value_mix, e});
  }
  if (d.gate > 0) {
    w.g1 = b.require(name("time_mix_g1.weight"), {e, d.gate});
    w.g2 = b.require(name("time_mix_g2.weight"), {d.gate, e});
  }
  w.k_k = b.require_vec(name("time_mix_k_k.weight"), e);
  w.k_a = b.require_vec(name("time_mix_k_a.weight"), e);
  const std::string rk = name("time_mix_r_k.weight");
  const gguf::TensorInfo* rki = b.file().find_tensor(rk);
  w.r_k = rki != nullptr && rki->ne[1] != 1 ? b.require(rk, {hs, e / hs}) : b.require_vec(rk, e);
  require_f32(b, w.r_k);
  bind_common(b, hp, il, w);
  bind_channel_mix(b, hp, il, /*receptance=*/false, w);
  return w;
}

RwkvSpec rwkv_spec(const HParams& hp, int version, int64_t il, const RwkvWeights& w, int64_t kv_heads) {
  RwkvSpec s;
  s.n_shift = hp.rwkv_token_shift;
  s.kv_heads = kv_heads;
  s.layer = il;
  s.w = &w;
  s.version = version;
  s.n_embd = hp.n_embd;
  s.head_size = hp.rwkv_head_size;
  return s;
}

}  // namespace ferrite::model
