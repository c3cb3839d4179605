#include "synth_rwkv.h"

namespace ferrite::tools {
namespace {

// clang-format off
constexpr RwkvShape kRwkvShapes[] = {
    // RWKV-6 World 1.6B and RWKV-7 World 1.5B (the converters' LoRA sizes).
    {"rwkv6-1b6", 6, 2048, 24, 7168, 64, 32, 64, 6, 0},
    {"rwkv7-1b5", 7, 2048, 24, 8192, 64, 96, 96, 64, 256},
};
// clang-format on

gguf::TensorInfo tensor(std::string name, std::vector<int64_t> ne) {
  gguf::TensorInfo t;
  t.name = std::move(name);
  t.n_dims = static_cast<uint32_t>(ne.size());
  t.n_elements = 1;
  for (size_t i = 0; i < ne.size(); ++i) {
    t.ne[i] = ne[i];
    t.n_elements *= static_cast<uint64_t>(ne[i]);
  }
  return t;
}

}  // namespace

const RwkvShape* find_rwkv_shape(const std::string& name, std::string& names) {
  const RwkvShape* found = nullptr;
  for (const RwkvShape& s : kRwkvShapes) {
    names += std::string(" ") + s.name;
    if (name == s.name) found = &s;
  }
  return found;
}

std::vector<gguf::TensorInfo> rwkv_tensors(const RwkvShape& s, int64_t n_vocab) {
  const int64_t e = s.n_embd;
  std::vector<gguf::TensorInfo> v;
  auto vec = [&](const std::string& n) { v.push_back(tensor(n, {e})); };
  auto ln = [&](const std::string& n) {
    vec(n + ".weight");
    vec(n + ".bias");
  };
  v.push_back(tensor("token_embd.weight", {e, n_vocab}));
  ln("token_embd_norm");
  for (int64_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    ln(p + "attn_norm");
    ln(p + "attn_norm_2");
    if (s.version == 6) {
      vec(p + "time_mix_lerp_x.weight");
      v.push_back(tensor(p + "time_mix_lerp_fused.weight", {e, 1, 1, 5}));
      v.push_back(tensor(p + "time_mix_w1.weight", {e, 5 * s.r1}));
      v.push_back(tensor(p + "time_mix_w2.weight", {s.r1, e, 5}));
      v.push_back(tensor(p + "time_mix_first.weight", {s.head_size, e / s.head_size}));
      vec(p + "time_mix_decay.weight");
      v.push_back(tensor(p + "time_mix_decay_w1.weight", {e, s.r2}));
      v.push_back(tensor(p + "time_mix_decay_w2.weight", {s.r2, e}));
      v.push_back(tensor(p + "time_mix_gate.weight", {e, e}));
      vec(p + "channel_mix_lerp_r.weight");
      v.push_back(tensor(p + "channel_mix_receptance.weight", {e, e}));
    } else {
      v.push_back(tensor(p + "time_mix_lerp_fused.weight", {e, 1, 1, 6}));
      const char* lo[4][3] = {{"w0", "w1", "w2"}, {"a0", "a1", "a2"}, {"v0", "v1", "v2"}, {nullptr, "g1", "g2"}};
      const int64_t rank[4] = {s.r1, s.r2, l == 0 ? s.r2 : s.r3, s.r4};
      for (int j = 0; j < 4; ++j) {
        if (lo[j][0] != nullptr) vec(p + "time_mix_" + lo[j][0] + ".weight");
        v.push_back(tensor(p + "time_mix_" + lo[j][1] + ".weight", {e, rank[j]}));
        v.push_back(tensor(p + "time_mix_" + lo[j][2] + ".weight", {rank[j], e}));
      }
      for (const char* n : {"k_k", "k_a", "r_k"}) vec(p + "time_mix_" + n + ".weight");
    }
    for (const char* n : {"key", "value", "receptance", "output"}) {
      v.push_back(tensor(p + "time_mix_" + n + ".weight", {e, e}));
    }
    ln(p + "time_mix_ln");
    vec(p + "channel_mix_lerp_k.weight");
    v.push_back(tensor(p + "channel_mix_key.weight", {e, s.n_ff}));
    v.push_back(tensor(p + "channel_mix_value.weight", {s.n_ff, e}));
  }
  ln("output_norm");
  v.push_back(tensor("output.weight", {e, n_vocab}));
  return v;
}

void set_rwkv_metadata(gguf::Writer& w, const RwkvShape& s) {
  const std::string a = s.version == 7 ? "rwkv7." : "rwkv6.";
  auto u32 = [&](const char* k, int64_t v) { w.set(a + k, gguf::Value::u32(static_cast<uint32_t>(v))); };
  u32("context_length", 1048576);
  u32("embedding_length", s.n_embd);
  u32("block_count", s.n_layer);
  u32("feed_forward_length", s.n_ff);
  u32("attention.head_count", 0);
  u32("wkv.head_size", s.head_size);
  u32("token_shift_count", 2);
  w.set(a + "attention.layer_norm_epsilon", gguf::Value::f32(1e-5f));
  if (s.version == 6) {
    u32("time_mix_extra_dim", s.r1);
    u32("time_decay_extra_dim", s.r2);
    u32("rescale_every_n_layers", s.r3);
  } else {
    u32("attention.decay_lora_rank", s.r1);
    u32("attention.iclr_lora_rank", s.r2);
    u32("attention.value_residual_mix_lora_rank", s.r3);
    u32("attention.gate_lora_rank", s.r4);
  }
}

}  // namespace ferrite::tools
