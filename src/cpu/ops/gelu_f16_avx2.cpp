// AVX2 tabulated GELU (gelu_f16.h), bit for bit the scalar one: 8 values per
// step, rounded to f16 by vcvtps2ph (round to nearest even, as
// fp32_to_fp16), looked up with a 32-bit gather whose low half is the entry,
// widened by vcvtph2ps.
#include <immintrin.h>

#include "cpu/ops/gelu_f16.h"

namespace ferrite::cpu {
namespace {

constexpr int kLanes = 8;
constexpr float kLowCut = -10.0f;  // gelu_f16.cpp's bounds: 0 at or below,
constexpr float kHighCut = 10.0f;  // x at or above
constexpr int kEntryBytes = 2;

}  // namespace

void geglu_f16_avx2(const uint16_t* table, const float* x, const float* up, int64_t n, float* y) {
  const __m256 low = _mm256_set1_ps(kLowCut);
  const __m256 high = _mm256_set1_ps(kHighCut);
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  const auto* base = reinterpret_cast<const int*>(table);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i entry = _mm256_and_si256(_mm256_i32gather_epi32(base, _mm256_cvtepu16_epi32(h), kEntryBytes), low16);
    // Eight 16-bit entries in order: packed within each 128-bit lane, then the lanes' low halves joined.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(entry, entry), 0x08);
    __m256 g = _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
    g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, high, _CMP_GE_OQ));
    g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, low, _CMP_LE_OQ));
    if (up != nullptr) g = _mm256_mul_ps(g, _mm256_loadu_ps(up + i));
    _mm256_storeu_ps(y + i, g);
  }
  for (; i < n; ++i) y[i] = up != nullptr ? gelu_f16(x[i]) * up[i] : gelu_f16(x[i]);
}

}  // namespace ferrite::cpu
