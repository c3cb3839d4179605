// AVX2 kernels for packed Q4_0 and Q8_0 weights (packed.h, packed_matmul.h),
// bit for bit the layout's reference: the integer block sums are exact and
// each block ends in the reference's one fused multiply-add.
//
// A 16-row group is taken as two halves of 8 rows: one 32-byte half of a
// 64-byte line holds the same 4 bytes of 8 rows, so an 8-lane int32 vector
// is the 8 rows' sums with no horizontal reduction. Without VNNI, a 4-byte
// group of a token's activations is broadcast (a load, no shuffle) and
// multiplied by vpmaddubsw (unsigned weight x signed activation -> pairs in
// int16):
//   Q4_0: nibbles 0..15 x |a| <= 127: a pair is at most 3,810, so the 8
//         products of a block add up in int16 (<= 30,480), then one vpmaddwd
//         by 1 widens them; -8 * sum(a) comes off in int32.
//   Q8_0: the stored q + 128 is flipped back to q; |q| x sign(a, q) keeps a
//         pair below 2^15 (128 * 127 * 2), and each product is widened at once.
#include <immintrin.h>

#include <cstdint>

#include "cpu/packed/packed.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kScaleBytes = kPackRows * 2;
constexpr int64_t kHalfRows = kPackRows / 2;
constexpr int64_t kLine = 64;      // one 4-byte lane of 16 rows
constexpr int64_t kHalfLine = 32;  // ... of 8 rows
constexpr int64_t kActQsOffset = 2;  // BlockQ8_0: f16 d, then 32 int8
constexpr int kPrefetchBytes = 4096;

using avx2::bcast32;
using avx2::load256;

// The reference's block step, acc + f32(s) * (d_w * d_a), the product of the
// scales rounded first.
inline __m256 block_fma(__m256 acc, __m256i s, __m256 dw, float da) {
  const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(da));
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), scale, acc);
}

// A block's weights are built once per call (Half::load) for all its
// tokens. Q4_0 keeps the whole block (8 vectors) for 4 tokens; Q8_0 takes
// it in two parts of 16 elements (4 vectors and their absolute values),
// which leaves room for 8 tokens' int32 sums in the 16 vector registers.
struct Q4_0Half {
  static constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK / 2;
  static constexpr int kOffset = 8;
  static constexpr int kParts = 1;   // the 8 products of a block add up in int16
  static constexpr int64_t kChunk = 4;  // 8 weight vectors and 4 tokens' sums in registers
  __m256i lo[4], hi[4];  // lane j: elements 4j..4j+3 (lo) and 16+4j..16+4j+3 (hi)

  void load(const uint8_t* qs, int64_t half, int /*part*/) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int j = 0; j < 4; ++j) {
      const __m256i v = load256(qs + j * kLine + half * kHalfLine);
      lo[j] = _mm256_and_si256(v, m4);
      hi[j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
  }
  // The 8 rows' sum_i w_i a_i for one token's block (w unsigned).
  __m256i dot(const int8_t* qa, int /*part*/) const {
    __m256i s = _mm256_maddubs_epi16(lo[0], bcast32(qa));
    for (int j = 1; j < 4; ++j) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(lo[j], bcast32(qa + 4 * j)));
    for (int j = 0; j < 4; ++j) s = _mm256_add_epi16(s, _mm256_maddubs_epi16(hi[j], bcast32(qa + kQK / 2 + 4 * j)));
    return _mm256_madd_epi16(s, _mm256_set1_epi16(1));
  }
};

struct Q8_0Half {
  static constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQK;
  static constexpr int kOffset = 0;  // the values are flipped back to signed
  static constexpr int kParts = 2;      // 16 elements at a time
  static constexpr int64_t kChunk = 8;  // 4 + 4 weight vectors and 8 tokens' sums in registers
  __m256i q[4], aq[4];  // lane j: elements 16 * part + 4j..4j+3, signed and absolute

  void load(const uint8_t* qs, int64_t half, int part) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int j = 0; j < 4; ++j) {
      q[j] = _mm256_xor_si256(load256(qs + (4 * part + j) * kLine + half * kHalfLine), flip);
      aq[j] = _mm256_sign_epi8(q[j], q[j]);
    }
  }
  __m256i dot(const int8_t* qa, int part) const {
    const int8_t* a = qa + part * (kQK / 2);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i s0 = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(aq[0], _mm256_sign_epi8(bcast32(a), q[0])), ones),
                                        _mm256_madd_epi16(_mm256_maddubs_epi16(aq[1], _mm256_sign_epi8(bcast32(a + 4), q[1])), ones));
    const __m256i s1 = _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(aq[2], _mm256_sign_epi8(bcast32(a + 8), q[2])), ones),
                                        _mm256_madd_epi16(_mm256_maddubs_epi16(aq[3], _mm256_sign_epi8(bcast32(a + 12), q[3])), ones));
    return _mm256_add_epi32(s0, s1);
  }
};

// NT tokens times H 8-row halves of a group, from half h0. One token takes
// both halves per pass (H = 2), so that the memory streams the group's lines
// once (with H = 1 the second half came from L2, half a line at a time).
template <typename Half, int NT, int H>
void half_group(const uint8_t* group, int64_t h0, const PackedActs& a, int64_t t0, float* y, int64_t ys) {
  __m256 acc[H][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = _mm256_setzero_ps();
  }
  const uint8_t* act = a.q8 + t0 * a.row_bytes + kActQsOffset;
  const float* ad = a.d + t0 * a.n_blocks;
  const int32_t* as = a.sum + t0 * a.n_blocks;
  for (int64_t b = 0; b < a.n_blocks; ++b) {
    const uint8_t* gb = group + b * Half::kGroupBlock;
    for (int64_t line = h0 * kHalfLine; line < Half::kGroupBlock; line += kLine) {
      _mm_prefetch(reinterpret_cast<const char*>(gb) + kPrefetchBytes + line, _MM_HINT_T0);
    }
    __m256i sumi[H][NT];
    for (auto& row : sumi) {
      for (auto& v : row) v = _mm256_setzero_si256();
    }
    for (int part = 0; part < Half::kParts; ++part) {
      for (int h = 0; h < H; ++h) {
        Half w;
        w.load(gb + kScaleBytes, h0 + h, part);
        for (int t = 0; t < NT; ++t) {
          const auto* qa = reinterpret_cast<const int8_t*>(act + t * a.row_bytes + b * sizeof(BlockQ8_0));
          sumi[h][t] = _mm256_add_epi32(sumi[h][t], w.dot(qa, part));
        }
      }
    }
    for (int h = 0; h < H; ++h) {
      const __m256 dw = avx2::load8_f16(gb + (h0 + h) * kHalfRows * 2);
      for (int t = 0; t < NT; ++t) {
        __m256i s = sumi[h][t];
        if constexpr (Half::kOffset != 0) s = _mm256_sub_epi32(s, _mm256_set1_epi32(Half::kOffset * as[t * a.n_blocks + b]));
        acc[h][t] = block_fma(acc[h][t], s, dw, ad[t * a.n_blocks + b]);
      }
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int t = 0; t < NT; ++t) _mm256_storeu_ps(y + t * ys + (h0 + h) * kHalfRows, acc[h][t]);
  }
}

template <typename Half>
void group(const uint8_t* g, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  run_halves<Half::kChunk>([]<int NT, int H>() { return &half_group<Half, NT, H>; }, g, a, t0, nt, y, ys);
}

}  // namespace

PackedKernel packed_kernel_avx2(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return group<Q4_0Half>;
    case TensorType::Q8_0:
      return group<Q8_0Half>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
