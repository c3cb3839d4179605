// AMX kernel for packed BF16 weights: tdpbf16ps on tiles of 16 tokens x 16
// rows, K in chunks of 32 columns. The packed group is the B operand as it
// lies (16 column pairs = 16 tile rows of 64 bytes per chunk); A is 16 token
// rows of 32 bf16; four token tiles share each B load and accumulate in four
// C tiles over the whole row, stored once at the end. No per-block scales:
// the sums stay in the tiles.
#include <immintrin.h>

#include <algorithm>

#include "cpu/packed/amx_tiles.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"

namespace ferrite::cpu {
namespace {

constexpr int kTileBytes = kAmxTileBytes;
constexpr int64_t kChunk = 32;                       // columns per tile product
constexpr int64_t kChunkBytes = kChunk / 2 * kTileBytes;  // 16 pair lines
constexpr int64_t kTokenTiles = 4;                   // C tiles 0-3

AmxTileConfig make_config() {
  AmxTileConfig c;
  for (int i = 0; i < kAmxTileCount; ++i) {  // C0-3: 16 tokens x 16 f32; 4: B; 5/6: A (16 tokens x 32 bf16)
    c.rows[i] = kAmxTokens;
    c.colsb[i] = kTileBytes;
  }
  return c;
}

// Tiles (literal numbers): 0-3 C of token tiles 0-3, 4 B, 5/6 A.
void bf16_amx(const uint8_t* group, const PackedFloatActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  static const AmxTileConfig config = make_config();
  _tile_loadconfig(&config);
  const auto* act = static_cast<const uint16_t*>(a.data);
  const long a_stride = static_cast<long>(a.k * 2);
  const long y_stride = static_cast<long>(ys * 4);
  for (int64_t tt = t0; tt < t0 + nt; tt += kTokenTiles * kAmxTokens) {
    const int64_t tiles = std::min<int64_t>(kTokenTiles, (t0 + nt - tt) / kAmxTokens);
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t c = 0; c < a.k; c += kChunk) {
      _tile_loadd(4, group + c / kChunk * kChunkBytes, kTileBytes);
      const uint16_t* ac = act + tt * a.k + c;
      _tile_loadd(5, ac, a_stride);
      _tile_dpbf16ps(0, 5, 4);
      if (tiles > 1) {
        _tile_loadd(6, ac + kAmxTokens * a.k, a_stride);
        _tile_dpbf16ps(1, 6, 4);
      }
      if (tiles > 2) {
        _tile_loadd(5, ac + 2 * kAmxTokens * a.k, a_stride);
        _tile_dpbf16ps(2, 5, 4);
      }
      if (tiles > 3) {
        _tile_loadd(6, ac + 3 * kAmxTokens * a.k, a_stride);
        _tile_dpbf16ps(3, 6, 4);
      }
    }
    float* yt = y + (tt - t0) * ys;
    _tile_stored(0, yt, y_stride);
    if (tiles > 1) _tile_stored(1, yt + kAmxTokens * ys, y_stride);
    if (tiles > 2) _tile_stored(2, yt + 2 * kAmxTokens * ys, y_stride);
    if (tiles > 3) _tile_stored(3, yt + 3 * kAmxTokens * ys, y_stride);
  }
  _tile_release();
}

}  // namespace

PackedFloatKernel packed_float_kernel_amx_impl(TensorType type) {
  return type == TensorType::BF16 ? bf16_amx : nullptr;
}

}  // namespace ferrite::cpu
