// Quantizers of the 32-element legacy types: a weighted scale search per
// block (quant_fit.h), then the levels re-rounded against the stored f16 scale.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quant_fit.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant::ref {

namespace {

std::vector<float> whole_row_weights(const float* x, int64_t n, const float* importance) {
  std::vector<float> w(static_cast<size_t>(n));
  make_weights(x, importance, static_cast<int>(n), w.data());
  return w;
}

// Symmetric block: levels in [lmin, lmax]; returns the stored f16 scale and
// writes L + (-lmin) (the unsigned stored value) into q.
uint16_t symmetric_block(const float* x, const float* w, int lmin, int lmax, int* q) {
  int L[kQK];
  const float d = fit_scale(x, w, kQK, lmin, lmax, L);
  const uint16_t dh = fp32_to_fp16(d);
  const float ds = fp16_to_fp32(dh);
  const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = round_clamp(x[j] * id, lmin, lmax) - lmin;
  return dh;
}

// Affine block x ≈ d q + m, q in [0, lmax].
void affine_block(const float* x, const float* w, int lmax, int* q, uint16_t* dh, uint16_t* mh) {
  int L[kQK];
  float d, m;
  constexpr AffineSearch kFine{16, 0.08f};
  fit_affine(x, w, kQK, lmax, false, L, &d, &m, kFine);
  *dh = fp32_to_fp16(d);
  *mh = fp32_to_fp16(m);
  const float ds = fp16_to_fp32(*dh), ms = fp16_to_fp32(*mh);
  const float id = ds != 0.0f ? 1.0f / ds : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = round_clamp((x[j] - ms) * id, 0, lmax);
}

void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
}

void pack_fifth_bits(const int* q, uint8_t* qh) {
  uint32_t bits = 0;
  for (int j = 0; j < kQK; ++j) bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &bits, sizeof(bits));
}

}  // namespace

void quantize_q4_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  const auto w = whole_row_weights(x, n, importance);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    b[i].d = symmetric_block(x + i * kQK, w.data() + i * kQK, -8, 7, q);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_q5_0(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  const auto w = whole_row_weights(x, n, importance);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    b[i].d = symmetric_block(x + i * kQK, w.data() + i * kQK, -16, 15, q);
    pack_nibbles(q, b[i].qs);
    pack_fifth_bits(q, b[i].qh);
  }
}

void quantize_q4_1(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  const auto w = whole_row_weights(x, n, importance);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    affine_block(x + i * kQK, w.data() + i * kQK, 15, q, &b[i].d, &b[i].m);
    pack_nibbles(q, b[i].qs);
  }
}

void quantize_q5_1(const float* x, void* dst, int64_t n, const float* importance) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  const auto w = whole_row_weights(x, n, importance);
  int q[kQK];
  for (int64_t i = 0; i < n / kQK; ++i) {
    affine_block(x + i * kQK, w.data() + i * kQK, 31, q, &b[i].d, &b[i].m);
    pack_nibbles(q, b[i].qs);
    pack_fifth_bits(q, b[i].qh);
  }
}

}  // namespace ferrite::quant::ref
