// AVX2 kernels for packed Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (packed_legacy.h), bit
// for bit the layout's reference. A 16-row group is taken as two halves of
// 8 rows (one 32-byte half of each 64-byte line), 8 int32 lanes = 8 rows,
// as for Q4_0 (packed_matmul_avx2.cpp): broadcast activation dwords into
// vpmaddubsw, sums in int16 where they cannot overflow (Q4_1: 8 x 2 x 15 x
// 127; Q5: by fours, 4 x 2 x 31 x 127), widened by vpmaddwd. The fifth bits
// reach their bytes by a byte broadcast and a bit test; IQ4_NL's values come
// from vpshufb and, being signed, multiply as |v| x sign(a, v); MXFP4 the
// same with its table, its E8M0 bytes made f32 scales (quant/mxfp4.h) in-register.
#include <immintrin.h>

#include <cstdint>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_legacy.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cpu {
namespace {

using avx2::bcast32;
using avx2::load256;
using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kLine = 64;
constexpr int64_t kHalfRows = 8;
constexpr int64_t kActQsOffset = 2;  // BlockQ8_0: f16 d, then 32 int8
constexpr int kPrefetchBytes = 4096;
constexpr int64_t kChunk = 4;  // tokens per pass over the weights

template <TensorType kType>
struct Legacy {
  static constexpr bool kMin = kType == TensorType::Q4_1 || kType == TensorType::Q5_1;
  static constexpr bool kFifth = kType == TensorType::Q5_0 || kType == TensorType::Q5_1;
  static constexpr bool kE8m0 = kType == TensorType::MXFP4;
  static constexpr bool kLut = kType == TensorType::IQ4_NL || kE8m0;
  static constexpr int64_t kGM = kPackRows * (kE8m0 ? 1 : 2);
  static constexpr int64_t kGQh = kGM + (kMin ? kPackRows * 2 : 0);
  static constexpr int64_t kGQs = kGQh + (kFifth ? kPackRows * 4 : 0);
  static constexpr int64_t kGroupBlock = kGQs + kPackRows * kQK / 2;

  __m256i w[8];   // lane j < 4: elements 4j..4j+3; j >= 4: 16 + 4(j-4) ..
  __m256i aw[8];  // IQ4_NL, MXFP4: |w|

  // The 8 rows' f32 scales of this half: f16 d, or for MXFP4 2^(e-128) from
  // the E8M0 bytes: exponent field e - 1 for e >= 2, the subnormals 0x200000 << e below.
  static __m256 scales(const uint8_t* gb, int64_t half) {
    if constexpr (kE8m0) {
      const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + half * kHalfRows)));
      const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
      const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
      return _mm256_castsi256_ps(_mm256_blendv_epi8(sub, normal, _mm256_cmpgt_epi32(e, _mm256_set1_epi32(1))));
    } else {
      return avx2::load8_f16(gb + half * kHalfRows * 2);
    }
  }

  void load(const uint8_t* gb, int64_t half) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int j = 0; j < 4; ++j) {
      const __m256i raw = load256(gb + kGQs + j * kLine + half * (kLine / 2));
      w[j] = _mm256_and_si256(raw, low4);
      w[j + 4] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
    if constexpr (kFifth) {
      // Byte i of lane j's dword gets bit e = 4j + i (e = 16 + 4(j-4) + i for j >= 4) of its row's qh.
      const __m256i qh = load256(gb + kGQh + half * kHalfRows * 4);
      const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,  //
                                              0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
      const __m256i bits = _mm256_set1_epi32(0x08040201);
      for (int j = 0; j < 8; ++j) {
        const int e0 = j < 4 ? 4 * j : 16 + 4 * (j - 4);
        const __m256i b = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_srli_epi32(qh, e0), spread), bits);
        w[j] = _mm256_or_si256(w[j], _mm256_and_si256(_mm256_cmpeq_epi8(b, bits), _mm256_set1_epi8(0x10)));
      }
    }
    if constexpr (kLut) {
      const int8_t* table = kE8m0 ? quant::kMxfp4Values.data() : quant::kIq4nlValues.data();
      const __m256i values = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table)));
      for (int j = 0; j < 8; ++j) {
        w[j] = _mm256_shuffle_epi8(values, w[j]);
        aw[j] = _mm256_sign_epi8(w[j], w[j]);
      }
    }
  }

  // The 8 rows' sum_e w_e a_e for one token's block (exact, int32).
  __m256i dot(const int8_t* qa) const {
    const __m256i ones = _mm256_set1_epi16(1);
    auto at = [qa](int j) { return bcast32(qa + (j < 4 ? 4 * j : 16 + 4 * (j - 4))); };
    if constexpr (kLut) {
      __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
      for (int j = 0; j < 8; j += 2) {
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(aw[j], _mm256_sign_epi8(at(j), w[j])), ones));
        s1 = _mm256_add_epi32(
            s1, _mm256_madd_epi16(_mm256_maddubs_epi16(aw[j + 1], _mm256_sign_epi8(at(j + 1), w[j + 1])), ones));
      }
      return _mm256_add_epi32(s0, s1);
    } else if constexpr (kFifth) {
      __m256i s0 = _mm256_maddubs_epi16(w[0], at(0)), s1 = _mm256_maddubs_epi16(w[4], at(4));
      for (int j = 1; j < 4; ++j) {
        s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(w[j], at(j)));
        s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(w[j + 4], at(j + 4)));
      }
      return _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
    } else {
      __m256i s = _mm256_maddubs_epi16(w[0], at(0));
      for (int j = 1; j < 8; ++j) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(w[j], at(j)));
      return _mm256_madd_epi16(s, ones);
    }
  }
};

// NT tokens times H 8-row halves of a group, from half h0. One token takes
// both halves per pass (H = 2): the memory streams the group's lines once.
template <TensorType kType, int NT, int H>
void half_group(const uint8_t* group, int64_t h0, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  using L = Legacy<kType>;
  __m256 acc[H][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = _mm256_setzero_ps();
  }
  const uint8_t* act = a.q8 + t0 * a.row_bytes + kActQsOffset;
  const int64_t first = t0 * a.n_blocks;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * L::kGroupBlock;
    for (int64_t line = h0 * (kLine / 2); line < L::kGroupBlock; line += kLine) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    for (int h = 0; h < H; ++h) {
      const int64_t half = h0 + h;
      const __m256 dw = L::scales(gb, half);
      [[maybe_unused]] __m256 mw;
      if constexpr (L::kMin) mw = avx2::load8_f16(gb + L::kGM + half * kHalfRows * 2);
      L w;
      w.load(gb, half);
      for (int t = 0; t < NT; ++t) {
        const auto* qa = reinterpret_cast<const int8_t*>(act + t * a.row_bytes + b * sizeof(BlockQ8_0));
        const int64_t at = first + t * a.n_blocks + b;
        __m256i s = w.dot(qa);
        if constexpr (kType == TensorType::Q5_0) s = _mm256_sub_epi32(s, _mm256_set1_epi32(16 * a.sum[at]));
        const __m256 da = _mm256_set1_ps(a.d[at]);
        if constexpr (L::kMin) {
          const __m256 p1 = avx2::pinned(_mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(s)));
          const __m256 p2 = avx2::pinned(_mm256_mul_ps(mw, _mm256_set1_ps(a.s[at])));
          acc[h][t] = _mm256_add_ps(acc[h][t], _mm256_add_ps(p1, p2));
        } else {
          acc[h][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, da), acc[h][t]);
        }
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ys + (h0 + h) * kHalfRows, acc[h][t]);
  }
}

template <TensorType kType>
void group_kernel(const uint8_t* g, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_halves<kChunk>([]<int NT, int H>() { return &half_group<kType, NT, H>; }, g, a, t0, nt, y, ys);
}

}  // namespace

PackedKernel packed_legacy_avx2(TensorType type) {
  switch (type) {
    case TensorType::Q4_1:
      return group_kernel<TensorType::Q4_1>;
    case TensorType::Q5_0:
      return group_kernel<TensorType::Q5_0>;
    case TensorType::Q5_1:
      return group_kernel<TensorType::Q5_1>;
    case TensorType::IQ4_NL:
      return group_kernel<TensorType::IQ4_NL>;
    case TensorType::MXFP4:
      return group_kernel<TensorType::MXFP4>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
