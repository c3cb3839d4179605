// AMX (Advanced Matrix Extensions) kernels for packed weights: 16 tokens x
// 16 rows per tile product. Per block of 32 values:
//   A = the 16 tokens' int8 activations  [16 tokens, 32 bytes]  (rows of the Q8_0 blocks, in place)
//   B = the 16 rows' signed weights       [8 quads, 16 rows x 4 bytes]  (unpacked once per call
//       into a buffer: Q4_0 nibbles minus 8, Q8_0's stored bytes minus 128)
//   C = A . B with tdpbssd (signed x signed, int32)  [16 tokens, 16 rows]
// then times d_w * d_a, one FMA per token into 16 f32 accumulators. The
// VNNI kernel and the reference subtract offset * sum(a) from unsigned sums
// instead: the same integers, so the same floats, and results equal the
// reference's bit for bit (with one vector op less per token and block in
// the finish, which is what bounds this kernel).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "cpu/packed/amx_tiles.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_matmul.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kScaleBytes = kPackRows * 2;
constexpr int64_t kActQsOffset = 2;  // BlockQ8_0: f16 d, then 32 int8
constexpr int kTileBytes = kAmxTileBytes;
constexpr int kQuads = kQK / 4;      // rows of B: groups of 4 values
// Tiles (the intrinsics take literal numbers): 0-3 hold the products of
// four blocks in flight (one accumulator tile would chain every block on the
// previous one's latency), 4/5 and 6/7 two pairs of A and B operands.
constexpr int kCTiles = 4;
constexpr int kTileA0 = 4, kTileB0 = 5, kTileA1 = 6, kTileB1 = 7;

AmxTileConfig make_config() {
  AmxTileConfig c;
  for (int i = 0; i < kCTiles; ++i) {
    c.rows[i] = kAmxTokens;
    c.colsb[i] = kTileBytes;  // 16 int32: one per weight row
  }
  for (int i : {kTileA0, kTileA1}) {
    c.rows[i] = kAmxTokens;
    c.colsb[i] = kQK;  // 32 int8 values per token
  }
  for (int i : {kTileB0, kTileB1}) {
    c.rows[i] = kQuads;
    c.colsb[i] = kTileBytes;  // 16 rows x 4 bytes
  }
  return c;
}

// The tile products of kCTiles blocks are stored to one half of a double
// buffer while the vector unit finishes the previous kCTiles blocks from the
// other half: the finish (the bound) overlaps the tile unit's latency.
constexpr int kHalves = 2;

// The weights of one group as B tiles, block after block (Q4_0: unpacked to
// bytes once per call and reused by every token tile).
uint8_t* b_buffer(int64_t n_blocks) {
  thread_local std::unique_ptr<uint8_t[], void (*)(uint8_t*)> buf(nullptr, [](uint8_t* p) {
    ::operator delete[](p, std::align_val_t{64});
  });
  thread_local int64_t capacity = 0;
  if (n_blocks > capacity) {
    buf.reset(static_cast<uint8_t*>(::operator new[](static_cast<size_t>(n_blocks) * kQuads * kTileBytes,
                                                     std::align_val_t{64})));
    capacity = n_blocks;
  }
  return buf.get();
}

template <TensorType kType>
void amx_group(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  constexpr bool kQ4 = kType == TensorType::Q4_0;
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * (kQ4 ? kQK / 2 : kQK);
  constexpr int8_t kOffset = kQ4 ? 8 : static_cast<int8_t>(-128);  // subtracted modulo 256 for Q8_0
  constexpr int64_t kBTile = kQuads * kTileBytes;
  static const AmxTileConfig config = make_config();
  _tile_loadconfig(&config);

  // B tiles of every block, signed: [n_blocks][8 quads][16 rows x 4 bytes].
  uint8_t* b_tiles = b_buffer(a.n_blocks);
  constexpr int64_t b_stride = kBTile;
  {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i off = _mm512_set1_epi8(kOffset);
    for (int64_t b = 0; b < a.n_blocks; ++b) {
      const uint8_t* wq = group + b * kGroupBlock + kScaleBytes;
      uint8_t* dst = b_tiles + b * kBTile;
      if constexpr (kQ4) {
        // Quad j of the low nibbles is B row j, of the high nibbles row 4 + j.
        for (int j = 0; j < kQuads / 2; ++j) {
          const __m512i v = _mm512_loadu_si512(wq + kTileBytes * j);
          _mm512_store_si512(dst + kTileBytes * j, _mm512_sub_epi8(_mm512_and_si512(v, m4), off));
          _mm512_store_si512(dst + kTileBytes * (kQuads / 2 + j),
                             _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), off));
        }
      } else {
        for (int j = 0; j < kQuads; ++j) {
          _mm512_store_si512(dst + kTileBytes * j, _mm512_sub_epi8(_mm512_loadu_si512(wq + kTileBytes * j), off));
        }
      }
    }
  }

  alignas(64) int32_t c[kHalves][kCTiles][kAmxTokens][kPackRows];
  const long arb = static_cast<long>(a.row_bytes);
  constexpr int64_t kA = sizeof(BlockQ8_0);
  for (int64_t tt = t0; tt < t0 + nt; tt += kAmxTokens) {
    __m512 acc[kAmxTokens];
    for (auto& v : acc) v = _mm512_setzero_ps();
    const uint8_t* act = a.q8 + tt * a.row_bytes + kActQsOffset;
    const float* ad = a.d + tt * a.n_blocks;
    // Adds the products of blocks [b, b + n) stored in c[half] to acc.
    auto finish = [&](int half, int64_t b, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const __m512 dw =
            _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + (b + i) * kGroupBlock)));
        for (int t = 0; t < kAmxTokens; ++t) {
          const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(ad[t * a.n_blocks + b + i]));
          acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[half][i][t])), scale, acc[t]);
        }
      }
    };
    const int64_t n_full = a.n_blocks / kCTiles * kCTiles;
    int half = 0;
    for (int64_t b = 0; b < n_full; b += kCTiles, half ^= 1) {
      const uint8_t* ab = act + b * kA;
      const uint8_t* bb = b_tiles + b * b_stride;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      _tile_loadd(4, ab, arb);
      _tile_loadd(5, bb, kTileBytes);
      _tile_dpbssd(0, 4, 5);
      _tile_loadd(6, ab + kA, arb);
      _tile_loadd(7, bb + b_stride, kTileBytes);
      _tile_dpbssd(1, 6, 7);
      _tile_loadd(4, ab + 2 * kA, arb);
      _tile_loadd(5, bb + 2 * b_stride, kTileBytes);
      _tile_dpbssd(2, 4, 5);
      _tile_loadd(6, ab + 3 * kA, arb);
      _tile_loadd(7, bb + 3 * b_stride, kTileBytes);
      _tile_dpbssd(3, 6, 7);
      if (b > 0) finish(half ^ 1, b - kCTiles, kCTiles);
      _tile_stored(0, c[half][0], kTileBytes);
      _tile_stored(1, c[half][1], kTileBytes);
      _tile_stored(2, c[half][2], kTileBytes);
      _tile_stored(3, c[half][3], kTileBytes);
    }
    if (n_full > 0) finish(half ^ 1, n_full - kCTiles, kCTiles);
    for (int64_t b = n_full; b < a.n_blocks; ++b) {
      _tile_zero(0);
      _tile_loadd(4, act + b * kA, arb);
      _tile_loadd(5, b_tiles + b * b_stride, kTileBytes);
      _tile_dpbssd(0, 4, 5);
      _tile_stored(0, c[0][0], kTileBytes);
      finish(0, b, 1);
    }
    for (int t = 0; t < kAmxTokens; ++t) _mm512_storeu_ps(y + (tt - t0 + t) * ys, acc[t]);
  }
  _tile_release();
}

}  // namespace

PackedKernel packed_kernel_amx_impl(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return amx_group<TensorType::Q4_0>;
    case TensorType::Q8_0:
      return amx_group<TensorType::Q8_0>;
    case TensorType::Q4_K:
      return packed_q4_k_amx;  // packed_k_amx.cpp
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
