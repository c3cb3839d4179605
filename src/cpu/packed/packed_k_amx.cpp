// AMX kernel for packed Q4_K (layout and formula in packed_k.h): 16 tokens x
// 16 rows per tile product, one product per sub-block of 32 values:
//   A = the 16 tokens' int8 Q8_K values of the sub-block  [16 tokens, 32 bytes] (in place)
//   B = the 16 rows' nibbles of the sub-block, unsigned    [8 quads, 16 rows x 4 bytes]
//   C = A . B with tdpbsud (signed x unsigned, int32)      [16 tokens, 16 rows]
// The vector unit then finishes each super-block per token exactly as the
// reference does: sumi = sum_sb sc_sb * C_sb (vpmulld, exact int32), summ =
// sum_sb m_sb * (bsums_2sb + bsums_2sb+1) (vpdpwssd with m in both 16-bit
// halves of a lane and the token's two bsums broadcast), then the f32
// finish of the reference; results equal it bit for bit.
//
// The nibbles, scales, mins and d/dmin of the group are unpacked once per
// call into a buffer reused by every token tile. The tile products of one
// super-block are stored to one half of a double buffer while the vector
// unit finishes the previous super-block from the other half.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)  // a gcc-only warning group (clang warns on the name)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstddef>
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

using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kSubBlocks = 8;
constexpr int kSubLen = kQKK / kSubBlocks;  // 32 values
constexpr int kQuads = kSubLen / 4;         // rows of B: groups of 4 values
constexpr int kTileBytes = kAmxTileBytes;
constexpr int kBTileBytes = kQuads * kTileBytes;  // 512
constexpr int kHalfSubBlocks = kSubBlocks / 2;    // products in flight (tiles 0-3)
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
constexpr int64_t kActQsOffset = offsetof(BlockQ8_K, qs);
constexpr int64_t kActBsumsOffset = offsetof(BlockQ8_K, bsums);
// Tiles (the intrinsics take literal numbers, written out in products()):
// 0-3 the products of four sub-blocks, 4/5 and 6/7 two pairs of A and B operands.
constexpr int kTileA0 = 4, kTileB0 = 5, kTileA1 = 6, kTileB1 = 7;

// One super-block of the group, unpacked for the tiles and the finish.
struct alignas(64) Unpacked {
  uint8_t b[kSubBlocks][kBTileBytes];  // B tiles: nibbles as bytes
  int32_t sc[kSubBlocks][kPackRows];   // 6-bit scales
  int32_t m2[kSubBlocks][kPackRows];   // 6-bit mins in both int16 halves
  float d[kPackRows];
  float dmin[kPackRows];
};

AmxTileConfig make_config() {
  AmxTileConfig c;
  for (int i = 0; i < kHalfSubBlocks; ++i) {
    c.rows[i] = kAmxTokens;
    c.colsb[i] = kTileBytes;  // 16 int32: one per weight row
  }
  for (int i : {kTileA0, kTileA1}) {
    c.rows[i] = kAmxTokens;
    c.colsb[i] = kSubLen;  // 32 int8 values per token
  }
  for (int i : {kTileB0, kTileB1}) {
    c.rows[i] = kQuads;
    c.colsb[i] = kTileBytes;  // 16 rows x 4 bytes
  }
  return c;
}

Unpacked* unpacked_buffer(int64_t n_blocks) {
  thread_local std::unique_ptr<Unpacked[], void (*)(Unpacked*)> buf(nullptr, [](Unpacked* p) {
    ::operator delete[](p, std::align_val_t{alignof(Unpacked)});
  });
  thread_local int64_t capacity = 0;
  if (n_blocks > capacity) {
    buf.reset(static_cast<Unpacked*>(
        ::operator new[](static_cast<size_t>(n_blocks) * sizeof(Unpacked), std::align_val_t{alignof(Unpacked)})));
    capacity = n_blocks;
  }
  return buf.get();
}

void unpack_block(const uint8_t* gb, Unpacked& u) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i low6 = _mm512_set1_epi32(63);
  const __m128i nib = _mm_set1_epi8(0x0F);
  // Lane j of pair p holds sub-block 2p in its low nibbles, 2p + 1 in its high ones.
  for (int p = 0; p < kSubBlocks / 2; ++p) {
    for (int j = 0; j < kQuads; ++j) {
      const __m512i raw = _mm512_loadu_si512(gb + kPackedQ4KQsOffset + (p * kQuads + j) * kTileBytes);
      _mm512_store_si512(u.b[2 * p] + j * kTileBytes, _mm512_and_si512(raw, low4));
      _mm512_store_si512(u.b[2 * p + 1] + j * kTileBytes, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
    }
  }
  for (int sb = 0; sb < kSubBlocks; ++sb) {
    const __m512i s =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(gb + kPackedQ4KScOffset + sb * 16)));
    __m128i mh = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(gb + kPackedQ4KMhiOffset + sb * 8));
    mh = _mm_unpacklo_epi64(_mm_and_si128(mh, nib), _mm_and_si128(_mm_srli_epi16(mh, 4), nib));
    const __m512i m = _mm512_or_si512(_mm512_srli_epi32(s, 6), _mm512_slli_epi32(_mm512_cvtepu8_epi32(mh), 2));
    _mm512_store_si512(u.sc[sb], _mm512_and_si512(s, low6));
    _mm512_store_si512(u.m2[sb], _mm512_or_si512(m, _mm512_slli_epi32(m, 16)));
  }
  _mm512_store_ps(u.d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb))));
  _mm512_store_ps(u.dmin,
                  _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gb + kPackedQ4KDminOffset))));
}

inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// Products of one super-block for 16 tokens: [sub-block][token][row].
using Products = int32_t[kSubBlocks][kAmxTokens][kPackRows];

// Adds super-block u's share of tokens [t_begin, t_end) to acc; c holds its
// tile products, act points at the first token's block.
inline void finish(const Products& c, const Unpacked& u, const uint8_t* act, long arb, int t_begin, int t_end,
                   __m512* acc) {
  const __m512 d = _mm512_load_ps(u.d);
  const __m512 dmin = _mm512_load_ps(u.dmin);
  for (int t = t_begin; t < t_end; ++t) {
    const uint8_t* blk = act + t * arb;
    __m512i sumi = _mm512_mullo_epi32(_mm512_load_si512(c[0][t]), _mm512_load_si512(u.sc[0]));
    __m512i summ = _mm512_madd_epi16(_mm512_load_si512(u.m2[0]), bcast32(blk + kActBsumsOffset));
    for (int sb = 1; sb < kSubBlocks; ++sb) {
      sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(_mm512_load_si512(c[sb][t]), _mm512_load_si512(u.sc[sb])));
      summ = _mm512_dpwssd_epi32(summ, _mm512_load_si512(u.m2[sb]), bcast32(blk + kActBsumsOffset + sb * 4));
    }
    float da;
    std::memcpy(&da, blk, sizeof(da));
    const __m512 ad = _mm512_set1_ps(da);
    const __m512 p1 = _mm512_mul_round_ps(_mm512_mul_ps(d, ad), _mm512_cvtepi32_ps(sumi), kRound);
    const __m512 p2 = _mm512_mul_round_ps(_mm512_mul_ps(dmin, ad), _mm512_cvtepi32_ps(summ), kRound);
    acc[t] = _mm512_add_ps(acc[t], _mm512_sub_ps(p1, p2));
  }
}

// Tile products of sub-blocks [first, first + 4) of the super-block whose
// activations start at ab (first token's qs) and weights at u, into c.
inline void products(const uint8_t* ab, long arb, const Unpacked& u, int first) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ab + first * kSubLen, arb);
  _tile_loadd(5, u.b[first], kTileBytes);
  _tile_dpbsud(0, 4, 5);
  _tile_loadd(6, ab + (first + 1) * kSubLen, arb);
  _tile_loadd(7, u.b[first + 1], kTileBytes);
  _tile_dpbsud(1, 6, 7);
  _tile_loadd(4, ab + (first + 2) * kSubLen, arb);
  _tile_loadd(5, u.b[first + 2], kTileBytes);
  _tile_dpbsud(2, 4, 5);
  _tile_loadd(6, ab + (first + 3) * kSubLen, arb);
  _tile_loadd(7, u.b[first + 3], kTileBytes);
  _tile_dpbsud(3, 6, 7);
}

inline void store_products(Products& c, int first) {
  _tile_stored(0, c[first], kTileBytes);
  _tile_stored(1, c[first + 1], kTileBytes);
  _tile_stored(2, c[first + 2], kTileBytes);
  _tile_stored(3, c[first + 3], kTileBytes);
}

}  // namespace

void packed_q4_k_amx(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static const AmxTileConfig config = make_config();
  _tile_loadconfig(&config);
  const int64_t nb = a.n_blocks;
  Unpacked* u = unpacked_buffer(nb);
  for (int64_t b = 0; b < nb; ++b) unpack_block(group + b * kPackedQ4KBlockBytes, u[b]);

  alignas(64) Products c[2];
  const long arb = static_cast<long>(a.row_bytes);
  constexpr int64_t kA = sizeof(BlockQ8_K);
  constexpr int kHalfTokens = kAmxTokens / 2;
  for (int64_t tt = t0; tt < t0 + nt; tt += kAmxTokens) {
    __m512 acc[kAmxTokens];
    for (auto& v : acc) v = _mm512_setzero_ps();
    const uint8_t* act = a.q8 + tt * a.row_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      Products& cur = c[b & 1];
      const Products& prev = c[(b & 1) ^ 1];
      const uint8_t* ab = act + b * kA + kActQsOffset;
      // The previous super-block's finish, in two halves, overlaps this one's tile products.
      products(ab, arb, u[b], 0);
      if (b > 0) finish(prev, u[b - 1], act + (b - 1) * kA, arb, 0, kHalfTokens, acc);
      store_products(cur, 0);
      products(ab, arb, u[b], kHalfSubBlocks);
      if (b > 0) finish(prev, u[b - 1], act + (b - 1) * kA, arb, kHalfTokens, kAmxTokens, acc);
      store_products(cur, kHalfSubBlocks);
    }
    finish(c[(nb - 1) & 1], u[nb - 1], act + (nb - 1) * kA, arb, 0, kAmxTokens, acc);
    for (int t = 0; t < kAmxTokens; ++t) _mm512_storeu_ps(y + (tt - t0 + t) * ys, acc[t]);
  }
  _tile_release();
}

}  // namespace ferrite::cpu
