// Quantizers of the ternary types TQ1_0 and TQ2_0: one f16 scale per 256
// values, levels -1, 0, 1, the scale chosen by a weighted search.
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_fit.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant::ref {

namespace {

// Ternary levels 0..2 (value + 1) of one super-block; returns the f16 scale.
uint16_t ternary_block(const float* x, const float* importance, int* t) {
  float w[kQKK];
  make_weights(x, importance, kQKK, w);
  int L[kQKK];
  const float d = fit_scale(x, w, kQKK, -1, 1, L);
  const uint16_t dh = fp32_to_fp16(d);
  const float ds = fp16_to_fp32(dh);
  const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
  for (int j = 0; j < kQKK; ++j) t[j] = round_clamp(x[j] * id, -1, 1) + 1;
  return dh;
}

// Packs up to five trits (most significant first) as a base-3 fraction of
// 256: the byte is ceil(value * 256 / 243).
uint8_t pack_trits(const int* trits, int count) {
  int v = 0;
  for (int k = 0; k < 5; ++k) v = v * 3 + (k < count ? trits[k] : 0);
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void quantize_tq1_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockTQ1_0*>(dst);
  int t[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i) {
    b[i].d = ternary_block(x + i * kQKK, importance ? importance + i * kQKK : nullptr, t);
    int tr[5];
    for (int m = 0; m < 32; ++m) {  // elements 0..159: 5 trits of byte m at 32 * n + m
      for (int k = 0; k < 5; ++k) tr[k] = t[32 * k + m];
      b[i].qs[m] = pack_trits(tr, 5);
    }
    for (int m = 0; m < 16; ++m) {  // elements 160..239
      for (int k = 0; k < 5; ++k) tr[k] = t[160 + 16 * k + m];
      b[i].qs[32 + m] = pack_trits(tr, 5);
    }
    for (int j = 0; j < 4; ++j) {  // elements 240..255: 4 trits per byte
      for (int k = 0; k < 4; ++k) tr[k] = t[240 + 4 * k + j];
      b[i].qh[j] = pack_trits(tr, 4);
    }
  }
}

void quantize_tq2_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockTQ2_0*>(dst);
  int t[kQKK];
  for (int64_t i = 0; i < n / kQKK; ++i) {
    b[i].d = ternary_block(x + i * kQKK, importance ? importance + i * kQKK : nullptr, t);
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    for (int e = 0; e < kQKK; ++e) {  // element e: byte 32 * (e / 128) + e % 32, bits 2 * ((e / 32) % 4)
      b[i].qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(t[e] << (2 * ((e / 32) % 4)));
    }
  }
}

}  // namespace ferrite::quant::ref
