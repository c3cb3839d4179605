// AVX-512 (VNNI, BW) product of IQ2_XXS weights with Q8_K activations, bit
// for bit the reference (quant_dot_iq_ref.cpp). Per block of 256 values:
// the 32 grid indices and the 32 7-bit sign indices (with their parity bit,
// quant::iq2_sign_byte) are spread once; then per pair of sub-blocks (64
// values) one vpgatherdq fetches the 8 grid entries (magnitudes <= 43,
// unsigned), the 64 sign bits are a mask that negates the token's
// activations (vpsubb under mask), one vpdpbusd sums groups of four, and
// vpmaddwd by the sub-blocks' odd scales 2 s + 1 (each group sum is below
// 2^15: 4 x 43 x 127) gives exact int32 terms. The AVX2 version spread the
// signs to +1 / -1 bytes and decoded each 32 values with scalar loads: on
// the device Xeon its decode was compute-bound at ~77 cycles per 256 values
// and row, half ik_llama.cpp's speed. Tiles of more than 4 tokens keep the
// AVX2 panels.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ2_XXS;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kPairs = kQKK / 64;  // pairs of 32-value sub-blocks per block
constexpr float kScale = 0.125f;
constexpr int kPrefetchBytes = 1024;

// One block's grid indices (byte 8p + l: group l of pair p), sign bytes (byte
// g: the 8 signs of group g) and per pair the odd scales, sub-block 2p in
// int32 lanes 0-7 and 2p + 1 in lanes 8-15.
struct Decoded {
  alignas(32) uint8_t index[32];
  alignas(32) uint8_t signs[32];
  __m512i scale[kPairs];
};

// (The index and parity steps are quant_tile_avx2.h's seven_bit_fields and
// sign_bytes_with_parity, written again here: an inline function compiled
// into both an AVX2 and an AVX-512 unit may be kept by the linker in its
// AVX-512 form for both, which an AVX2-only CPU cannot run.)
inline void decode(const BlockIQ2_XXS& w, Decoded& out) {
  // Dwords 2 ib (four grid index bytes) and 2 ib + 1 (four 7-bit sign
  // indices, then the 4-bit scale) of sub-block ib.
  const __m512i q = _mm512_loadu_si512(w.qs);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.index), _mm512_castsi512_si256(_mm512_permutexvar_epi32(even, q)));
  const __m256i words = _mm512_castsi512_si256(_mm512_permutexvar_epi32(odd, q));
  // The four 7-bit fields of each word, one per byte.
  __m256i idx = _mm256_and_si256(words, _mm256_set1_epi32(0x7F));
  idx = _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 1), _mm256_set1_epi32(0x7F00)));
  idx = _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 2), _mm256_set1_epi32(0x7F0000)));
  idx = _mm256_or_si256(idx, _mm256_and_si256(_mm256_slli_epi32(words, 3), _mm256_set1_epi32(0x7F000000)));
  // Bit 7: the parity of the seven (0x80 per odd nibble, the two nibbles' xor).
  const __m256i odd_nibble = _mm256_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0,  //
                                              0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i parity = _mm256_xor_si256(_mm256_shuffle_epi8(odd_nibble, _mm256_and_si256(idx, low4)),
                                          _mm256_shuffle_epi8(odd_nibble, _mm256_and_si256(_mm256_srli_epi16(idx, 4), low4)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(out.signs), _mm256_or_si256(idx, parity));
  // 2 s + 1 per sub-block, as the low int16 of int32 lanes (high half zero).
  const __m512i sc = _mm512_castsi256_si512(
      _mm256_or_si256(_mm256_slli_epi32(_mm256_srli_epi32(words, 28), 1), _mm256_set1_epi32(1)));
  for (int p = 0; p < kPairs; ++p) {
    const __m512i pick = _mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p,  //
                                           2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                           2 * p + 1);
    out.scale[p] = _mm512_permutexvar_epi32(pick, sc);
  }
}

// The 64 magnitudes of pair p (group l of the pair in bytes 8l..8l+7).
inline __m512i magnitudes(const Decoded& d, int p) {
  const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d.index + 8 * p)));
  return _mm512_i32gather_epi64(idx, reinterpret_cast<const long long*>(quant::kIq2xxsGrid.data()), 8);
}

inline int32_t hsum(__m512i v) { return _mm512_reduce_add_epi32(v); }

// The reference's block term, (d_w * d_a) * f32(sumi), rounded as it rounds
// it (no fused multiply-add).
inline float block_term(float dw, float da, int32_t sumi) {
  float p = dw * da;
  p = p * static_cast<float>(sumi);
  asm("" : "+x"(p));
  return p;
}

// y[t * ys] = the dot of one weight row with NT activation rows.
template <int NT>
void row_tokens(const BlockIQ2_XXS* w, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  float sum[NT] = {};
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t b = 0; b < k / kQKK; ++b) {
    _mm_prefetch(reinterpret_cast<const char*>(w + b) + kPrefetchBytes, _MM_HINT_T0);
    Decoded d;
    decode(w[b], d);
    __m512i acc[NT];
    for (int t = 0; t < NT; ++t) acc[t] = zero;
    for (int p = 0; p < kPairs; ++p) {
      const __m512i mag = magnitudes(d, p);
      uint64_t bits;
      std::memcpy(&bits, d.signs + 8 * p, sizeof bits);
      const __mmask64 negative = _cvtu64_mask64(bits);
      for (int t = 0; t < NT; ++t) {
        const auto* a = reinterpret_cast<const BlockQ8_K*>(act + t * arb) + b;
        const __m512i x = _mm512_loadu_si512(a->qs + 64 * p);
        const __m512i signed_x = _mm512_mask_sub_epi8(x, negative, zero, x);
        const __m512i groups = _mm512_dpbusd_epi32(zero, mag, signed_x);
        acc[t] = _mm512_add_epi32(acc[t], _mm512_madd_epi16(groups, d.scale[p]));
      }
    }
    const float dw = _cvtsh_ss(w[b].d);
    for (int t = 0; t < NT; ++t) {
      const auto* a = reinterpret_cast<const BlockQ8_K*>(act + t * arb) + b;
      sum[t] += block_term(dw, a->d, hsum(acc[t]));
    }
  }
  for (int t = 0; t < NT; ++t) y[t * ys] = sum[t] * kScale;
}

float dot(const void* w_row, const void* act_row, int64_t k) {
  float y;
  row_tokens<1>(static_cast<const BlockIQ2_XXS*>(w_row), static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

const QuantDot& avx2() { return *quant_dot_iq_avx2(TensorType::IQ2_XXS); }

// Up to 4 tokens here; more (prefill) in the AVX2 panels, which decode a
// block once for all their tokens.
void tile(const uint8_t* w, size_t wrb, int64_t nr, const uint8_t* act, size_t arb, int64_t nt, int64_t k, float* y,
          int64_t ys) {
  if (nt > 4) {
    avx2().tile(w, wrb, nr, act, arb, nt, k, y, ys);
    return;
  }
  using Fn = void (*)(const BlockIQ2_XXS*, const uint8_t*, size_t, int64_t, float*, int64_t);
  static constexpr Fn kFns[4] = {row_tokens<1>, row_tokens<2>, row_tokens<3>, row_tokens<4>};
  for (int64_t r = 0; r < nr; ++r) {
    kFns[nt - 1](reinterpret_cast<const BlockIQ2_XXS*>(w + r * wrb), act, arb, k, y + r, ys);
  }
}

}  // namespace

const QuantDot* quant_dot_iq_avx512(TensorType type) {
  if (type != TensorType::IQ2_XXS) return nullptr;
  // The activation format and quantizer of the AVX2 product (Q8_K).
  static const QuantDot q = [] {
    QuantDot d = avx2();
    d.dot = dot;
    d.tile = tile;
    return d;
  }();
  return &q;
}

}  // namespace ferrite::cpu
