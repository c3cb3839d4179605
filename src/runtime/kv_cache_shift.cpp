// Context shift: moving a range of a sequence's positions by delta. RoPE
// angles are linear in the position (every scaling here multiplies the
// position by a per-pair constant: linear, YaRN's ramp, Llama 3's and
// LongRoPE's frequency factors), so a key rotated for position p becomes the
// key for p + delta by one more rotation by the angles of delta, with the
// layer's own settings (gemma3's sliding layers have their own base).
// Models without RoPE (ALiBi: bloom, mpt, refact, jais; learned positions:
// gpt2, starcoder) give n_rot 0: their keys carry no position and only the
// cells' positions move; ALiBi's distances come from those positions in the
// next step's masks (Context::decode_pass).
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "model/kv_quant.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {
namespace {

// The pure rotation by delta: the magnitude scale (YaRN's, LongRoPE's
// attention factor) was applied once when the key was computed and must not
// be applied again.
cpu::RopeConfig rotation_only(cpu::RopeConfig c) {
  c.attn_factor = 1.0f;
  if (c.ext_factor != 0.0f) c.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / c.freq_scale));
  return c;
}

bool same_rotation(const cpu::RopeConfig& a, const cpu::RopeConfig& b) {
  return a.n_rot == b.n_rot && a.neox == b.neox && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.ext_factor == b.ext_factor && a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.yarn_truncate == b.yarn_truncate &&
         a.freq_factors == b.freq_factors;
}

}  // namespace

void KvCache::rotate_key_row(uint8_t* row, TensorType type, const cpu::RopeConfig& cfg, const float* cos_t,
                             const float* sin_t, std::vector<float>& scratch) const {
  scratch.resize(static_cast<size_t>(n_embd_kv_));
  const int64_t n_head_kv = head_dim_ > 0 ? n_embd_kv_ / head_dim_ : 0;
  if (type != TensorType::F16) {
    model::kv_row_to_f32(type, row, n_embd_kv_, scratch.data());
    cpu::rope_apply(cfg, cos_t, sin_t, scratch.data(), 1, n_head_kv, head_dim_);
    model::kv_quantize_row(type, scratch.data(), row, n_embd_kv_);
    return;
  }
  auto* k = reinterpret_cast<uint16_t*>(row);
  for (int64_t d = 0; d < n_embd_kv_; ++d) scratch[static_cast<size_t>(d)] = fp16_to_fp32(k[d]);
  cpu::rope_apply(cfg, cos_t, sin_t, scratch.data(), 1, n_head_kv, head_dim_);
  for (int64_t d = 0; d < n_embd_kv_; ++d) k[d] = fp32_to_fp16(scratch[static_cast<size_t>(d)]);
}

void KvCache::shift(int seq, int32_t p0, int32_t p1, int32_t delta, std::span<const cpu::RopeConfig> layer_rope,
                    const KeyRotator& offloaded) {
  if (seq >= kMaxSequences) throw InvalidArgument("sequence id " + std::to_string(seq) + " out of range");
  if (recurrent_) {
    throw InvalidArgument("context shift is not possible for a model with recurrent (SSM) layers: their state "
                          "holds every position it has seen");
  }
  if (window_) {
    // As llama.cpp's SWA cache: the cells a shifted window would see again are gone.
    throw InvalidArgument(std::string("context shift is not possible with the ") +
                          (window_->reach_.chunk > 0
                               ? "chunked-attention KV cache (it keeps only the current chunk of the chunked layers)"
                               : "sliding-window KV cache (it keeps only the window of the sliding layers)") +
                          "; keep the whole cache with --swa-full");
  }
  if (static_cast<int64_t>(layer_rope.size()) != n_layer_) {
    throw InvalidArgument("context shift needs one RoPE setting per layer");
  }
  for (const cpu::RopeConfig& r : layer_rope) {
    if (r.n_rot < 0 || r.n_rot > head_dim_ || r.n_rot % 2 != 0) {
      throw InvalidArgument("RoPE dimension count " + std::to_string(r.n_rot) + " does not fit the head size");
    }
  }
  if (delta == 0) return;

  // The cells that move (those that would reach a negative position go).
  std::vector<int32_t> moved;
  for (int64_t i = 0; i < size(); ++i) {
    Cell& c = cells_[static_cast<size_t>(i)];
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (seq >= 0 && !c.has(seq)) continue;
    const int64_t to = static_cast<int64_t>(c.pos) + delta;
    if (to < 0) {
      c = Cell{};
      --used_;
      continue;
    }
    if (to > INT32_MAX) throw InvalidArgument("position shift overflows");
    c.pos = static_cast<int32_t>(to);
    moved.push_back(static_cast<int32_t>(i));
  }
  if (moved.empty()) return;

  // One table of cos/sin per distinct rotation (most models: one).
  std::vector<float> cos_t, sin_t, scratch;
  cpu::RopeConfig table_cfg{};
  bool have_table = false;
  for (int64_t il = 0; il < n_layer_; ++il) {
    const cpu::RopeConfig cfg = rotation_only(layer_rope[static_cast<size_t>(il)]);
    const int half = cfg.n_rot / 2;
    if (half == 0) continue;  // no rotary embedding: positions alone move
    if (!have_table || !same_rotation(cfg, table_cfg)) {
      cos_t.resize(static_cast<size_t>(half));
      sin_t.resize(static_cast<size_t>(half));
      cpu::rope_table(cfg, &delta, 1, cos_t.data(), sin_t.data());
      table_cfg = cfg;
      have_table = true;
    }
    const bool stored = type_k_ == TensorType::F16 ? !k_[static_cast<size_t>(il)].empty()
                                                   : !kq_[static_cast<size_t>(il)].empty();
    if (!stored) {
      // The layer's keys live with a backend (GPU offload): it rotates them
      // with the same row code, through host copies.
      if (!offloaded) throw InvalidArgument("context shift: the keys of layer " + std::to_string(il) + " are not here");
      offloaded(il, moved, [&](uint8_t* row) { rotate_key_row(row, type_k_, cfg, cos_t.data(), sin_t.data(), scratch); });
      continue;
    }
    for (int32_t cell : moved) {
      uint8_t* row = type_k_ == TensorType::F16 ? reinterpret_cast<uint8_t*>(k_row(il, cell)) : k_quant_row(il, cell);
      rotate_key_row(row, type_k_, cfg, cos_t.data(), sin_t.data(), scratch);
    }
  }
}

}  // namespace ferrite::runtime
