// Context shift: moving a range of a sequence's positions by delta. RoPE
// angles are linear in the position (every scaling type here multiplies the
// position by a per-pair constant), so a key rotated for position p becomes
// the key for p + delta by one more rotation by the angles of delta.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "model/kv_quant.h"
#include "runtime/kv_cache.h"

namespace ferrite::runtime {

void KvCache::shift(int seq, int32_t p0, int32_t p1, int32_t delta, const cpu::RopeConfig& rope) {
  if (seq >= kMaxSequences) throw InvalidArgument("sequence id " + std::to_string(seq) + " out of range");
  if (rope.n_rot < 0 || rope.n_rot > head_dim_ || rope.n_rot % 2 != 0) {
    throw InvalidArgument("RoPE dimension count " + std::to_string(rope.n_rot) + " does not fit the head size");
  }
  if (delta == 0) return;

  // The pure rotation by delta: YaRN's magnitude scale (applied once when the
  // key was computed) must not be applied again.
  cpu::RopeConfig cfg = rope;
  cfg.attn_factor = 1.0f;
  if (cfg.ext_factor != 0.0f) cfg.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / cfg.freq_scale));
  const int half = cfg.n_rot / 2;
  std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
  if (half > 0) cpu::rope_table(cfg, &delta, 1, cos_t.data(), sin_t.data());

  const int64_t n_head_kv = head_dim_ > 0 ? n_embd_kv_ / head_dim_ : 0;
  std::vector<float> row(static_cast<size_t>(n_embd_kv_));  // [n_head_kv, head_dim]
  for (int64_t i = 0; i < size(); ++i) {
    Cell& c = cells_[static_cast<size_t>(i)];
    if (c.pos < 0 || c.pos < p0 || (p1 >= 0 && c.pos >= p1)) continue;
    if (seq >= 0 && !c.has(seq)) continue;
    const int64_t moved = static_cast<int64_t>(c.pos) + delta;
    if (moved < 0) {
      c = Cell{};
      --used_;
      continue;
    }
    if (moved > INT32_MAX) throw InvalidArgument("position shift overflows");
    c.pos = static_cast<int32_t>(moved);
    if (half == 0) continue;
    for (int64_t il = 0; il < n_layer_; ++il) {
      if (type_k_ != TensorType::F16) {
        uint8_t* k = k_quant_row(il, i);
        model::kv_row_to_f32(type_k_, k, n_embd_kv_, row.data());
        cpu::rope_apply(cfg, cos_t.data(), sin_t.data(), row.data(), 1, n_head_kv, head_dim_);
        model::kv_quantize_row(type_k_, row.data(), k, n_embd_kv_);
        continue;
      }
      uint16_t* k = k_row(il, i);
      for (int64_t d = 0; d < n_embd_kv_; ++d) row[static_cast<size_t>(d)] = fp16_to_fp32(k[d]);
      cpu::rope_apply(cfg, cos_t.data(), sin_t.data(), row.data(), 1, n_head_kv, head_dim_);
      for (int64_t d = 0; d < n_embd_kv_; ++d) k[d] = fp32_to_fp16(row[static_cast<size_t>(d)]);
    }
  }
}

}  // namespace ferrite::runtime
