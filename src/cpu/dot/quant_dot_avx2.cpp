// AVX2 dot products of Q4_0 and Q8_0 weight rows with Q8_0 activations (the
// level below AVX-512, which otherwise fell back to the scalar reference).
// A block's 32 integer products are summed with vpmaddubsw / vpmaddwd: |w| as
// the unsigned operand, a with w's sign as the signed one (|w| <= 128 and
// |a| <= 127 keep each pair sum below the int16 limit). The block sums are
// combined in float one block after another as quant_dot_ref.cpp does
// (sum += d_w * d_a * s, the product rounded before the sum; the f16 scales
// widened by F16C, exactly), so the results equal the reference's bit for bit.
#include <immintrin.h>

#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_0;
using quant::BlockQ8_0;
using quant::kQK;

constexpr int8_t kQ4Offset = 8;
constexpr int8_t kNibbleMask = 0x0F;
constexpr int kNibbleShift = 4;

constexpr int kBlocksPerStep = 4;

// Eight int32 partial sums of sum_j w_j a_j over 32 signed bytes (exact).
inline __m256i partial_dot(__m256i w, __m256i a) {
  const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
  return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// The signed weights of block b: [32 x int8].
struct Q4_0Weights {
  const BlockQ4_0* w;
  __m256i operator()(int64_t b) const {
    // Elements 0..15 are the low nibbles, 16..31 the high ones.
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
    const __m256i nib =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, kNibbleShift), q), _mm256_set1_epi8(kNibbleMask));
    return _mm256_sub_epi8(nib, _mm256_set1_epi8(kQ4Offset));
  }
  uint16_t d(int64_t b) const { return w[b].d; }
};
struct Q8_0Weights {
  const BlockQ8_0* w;
  __m256i operator()(int64_t b) const { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs)); }
  uint16_t d(int64_t b) const { return w[b].d; }
};

inline __m256i act(const BlockQ8_0* a, int64_t b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a[b].qs));
}

// sum over blocks of d_w d_a s_b: the four block sums of a step reduced
// together, their products (d_w * d_a) * s_b computed four at a time (each
// rounded as the reference rounds it), then added to sum one by one, in
// block order. The products are kept apart from the sums (no fused
// multiply-add: this file is compiled with FMA, the reference without).
template <typename Weights>
float dot_blocks(const Weights& w, const BlockQ8_0* a, int64_t nb) {
  float sum = 0.0f;
  int64_t b = 0;
  for (; b + kBlocksPerStep <= nb; b += kBlocksPerStep) {
    const __m256i s0 = partial_dot(w(b), act(a, b));
    const __m256i s1 = partial_dot(w(b + 1), act(a, b + 1));
    const __m256i s2 = partial_dot(w(b + 2), act(a, b + 2));
    const __m256i s3 = partial_dot(w(b + 3), act(a, b + 3));
    // hadd twice: lane i of each 128-bit half holds half of block i's sum.
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(s0, s1), _mm256_hadd_epi32(s2, s3));
    const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    const __m128 dw = _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(w.d(b)), static_cast<int16_t>(w.d(b + 1)),
                                                  static_cast<int16_t>(w.d(b + 2)), static_cast<int16_t>(w.d(b + 3)),
                                                  0, 0, 0, 0));
    const __m128 da = _mm_cvtph_ps(_mm_setr_epi16(static_cast<int16_t>(a[b].d), static_cast<int16_t>(a[b + 1].d),
                                                  static_cast<int16_t>(a[b + 2].d),
                                                  static_cast<int16_t>(a[b + 3].d), 0, 0, 0, 0));
    __m128 p = _mm_mul_ps(_mm_mul_ps(dw, da), _mm_cvtepi32_ps(sums));
    asm("" : "+x"(p));
    alignas(16) float pf[kBlocksPerStep];
    _mm_store_ps(pf, p);
    for (float v : pf) sum += v;
  }
  for (; b < nb; ++b) {
    const __m256i s = partial_dot(w(b), act(a, b));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(1, 0, 3, 2)));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, _MM_SHUFFLE(2, 3, 0, 1)));
    float p = _cvtsh_ss(w.d(b)) * _cvtsh_ss(a[b].d) * static_cast<float>(_mm_cvtsi128_si32(t));
    asm("" : "+x"(p));
    sum += p;
  }
  return sum;
}

float dot_q4_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  return dot_blocks(Q4_0Weights{static_cast<const BlockQ4_0*>(w_row)}, static_cast<const BlockQ8_0*>(act_row),
                    k / kQK);
}

float dot_q8_0_q8_0(const void* w_row, const void* act_row, int64_t k) {
  return dot_blocks(Q8_0Weights{static_cast<const BlockQ8_0*>(w_row)}, static_cast<const BlockQ8_0*>(act_row),
                    k / kQK);
}

// The reference's activation format, with the AVX2 quantizer (the same
// bits) and these dots.
QuantDot with_dot(TensorType type, float (*dot)(const void*, const void*, int64_t)) {
  QuantDot q = *quant_dot_ref(type);
  q.quantize = quantize_q8_0_avx2;
  q.dot = dot;
  q.tile = nullptr;
  return q;
}

}  // namespace

const QuantDot* quant_dot_avx2(TensorType type) {
  static const QuantDot q4_0 = with_dot(TensorType::Q4_0, dot_q4_0_q8_0);
  static const QuantDot q8_0 = with_dot(TensorType::Q8_0, dot_q8_0_q8_0);
  switch (type) {
    case TensorType::Q4_0:
      return &q4_0;
    case TensorType::Q8_0:
      return &q8_0;
    default:
      if (const QuantDot* q = quant_dot_k_avx2(type)) return q;  // the K types (quant_dot_k_avx2.cpp)
      return quant_dot_iq_avx2(type);  // the IQ, TQ and other legacy types (quant_dot_iq.h), else nullptr
  }
}

}  // namespace ferrite::cpu
