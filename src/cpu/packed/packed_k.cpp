// Packing of Q4_K and Q5_K groups (layout in packed_k.h) and the plain
// reference of the packed products, read straight off the layout one value
// at a time.
#include "cpu/packed/packed_k.h"

#include <cstring>
#include <type_traits>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ4_K;
using quant::BlockQ5_K;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kSubBlocks = 8;        // sub-blocks of 32 per super-block
constexpr int kSubLen = kQKK / kSubBlocks;
constexpr int kLaneBytes = 4;
constexpr int kQsBytes = kQKK / 2;   // 128 bytes of nibbles per row and block
constexpr uint8_t kLow6 = 63;
constexpr uint8_t kLow4 = 0x0F;
constexpr int kHalfRows = 8;
constexpr int kQhBytes = kQKK / 8;   // Q5_K: 32 bytes of fifth bits per row and block
constexpr int kQ5High = 16;

static_assert(sizeof(BlockQ4_K) * kPackRows == kPackedQ4KBlockBytes);
static_assert(sizeof(BlockQ5_K) * kPackRows == kPackedQ5KBlockBytes);

template <typename Block>
constexpr bool kFive = std::is_same_v<Block, BlockQ5_K>;
template <typename Block>
constexpr int64_t kGroupBlock = kFive<Block> ? kPackedQ5KBlockBytes : kPackedQ4KBlockBytes;

// The inverse of quant::ref::k_scale_min: 8 scales and 8 mins (6 bits) -> 12 bytes.
void encode_scales(const uint8_t* sc, const uint8_t* m, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & kLow4) | ((m[j + 4] & kLow4) << 4));
  }
}

template <typename Block>
void pack_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* gb = packed + b * kGroupBlock<Block>;
    std::memset(gb + kPackedQ4KMhiOffset, 0, kPackedQ4KQsOffset - kPackedQ4KMhiOffset);
    for (int64_t r = 0; r < kPackRows; ++r) {
      const auto* blk = reinterpret_cast<const Block*>(plain + r * row_bytes) + b;
      std::memcpy(gb + r * 2, &blk->d, 2);
      std::memcpy(gb + kPackedQ4KDminOffset + r * 2, &blk->dmin, 2);
      for (int sb = 0; sb < kSubBlocks; ++sb) {
        uint8_t sc, m;
        quant::ref::k_scale_min(sb, blk->scales, &sc, &m);
        gb[kPackedQ4KScOffset + sb * kPackRows + r] = static_cast<uint8_t>(sc | ((m & 3) << 6));
        const int shift = r < kHalfRows ? 0 : 4;
        gb[kPackedQ4KMhiOffset + sb * kHalfRows + r % kHalfRows] |= static_cast<uint8_t>((m >> 2) << shift);
      }
      for (int j = 0; j < kQsBytes / kLaneBytes; ++j) {
        std::memcpy(gb + kPackedQ4KQsOffset + (j * kPackRows + r) * kLaneBytes, blk->qs + j * kLaneBytes, kLaneBytes);
      }
      if constexpr (kFive<Block>) {
        for (int j = 0; j < kQhBytes / kLaneBytes; ++j) {
          std::memcpy(gb + kPackedQ5KQhOffset + (j * kPackRows + r) * kLaneBytes, blk->qh + j * kLaneBytes, kLaneBytes);
        }
      }
    }
  }
}

template <typename Block>
void unpack_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* gb = packed + b * kGroupBlock<Block>;
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* blk = reinterpret_cast<Block*>(plain + r * row_bytes) + b;
      std::memcpy(&blk->d, gb + r * 2, 2);
      std::memcpy(&blk->dmin, gb + kPackedQ4KDminOffset + r * 2, 2);
      uint8_t sc[kSubBlocks], m[kSubBlocks];
      for (int sb = 0; sb < kSubBlocks; ++sb) {
        const uint8_t s = gb[kPackedQ4KScOffset + sb * kPackRows + r];
        const int shift = r < kHalfRows ? 0 : 4;
        const uint8_t hi = (gb[kPackedQ4KMhiOffset + sb * kHalfRows + r % kHalfRows] >> shift) & kLow4;
        sc[sb] = s & kLow6;
        m[sb] = static_cast<uint8_t>((s >> 6) | (hi << 2));
      }
      encode_scales(sc, m, blk->scales);
      for (int j = 0; j < kQsBytes / kLaneBytes; ++j) {
        std::memcpy(blk->qs + j * kLaneBytes, gb + kPackedQ4KQsOffset + (j * kPackRows + r) * kLaneBytes, kLaneBytes);
      }
      if constexpr (kFive<Block>) {
        for (int j = 0; j < kQhBytes / kLaneBytes; ++j) {
          std::memcpy(blk->qh + j * kLaneBytes, gb + kPackedQ5KQhOffset + (j * kPackRows + r) * kLaneBytes, kLaneBytes);
        }
      }
    }
  }
}

template <typename Block>
void packed_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * kGroupBlock<Block>;
        int32_t sumi = 0, summ = 0;
        for (int sb = 0; sb < kSubBlocks; ++sb) {
          const uint8_t s = gb[kPackedQ4KScOffset + sb * kPackRows + r];
          const int shift = r < kHalfRows ? 0 : 4;
          const uint8_t hi = (gb[kPackedQ4KMhiOffset + sb * kHalfRows + r % kHalfRows] >> shift) & kLow4;
          const int32_t sc = s & kLow6;
          const int32_t m = (s >> 6) | (hi << 2);
          int32_t dot = 0;
          for (int l = 0; l < kSubLen; ++l) {
            const int j = (sb / 2) * (kSubLen / kLaneBytes) + l / kLaneBytes;  // lane of qs byte (sb/2)*32 + l
            const uint8_t byte = gb[kPackedQ4KQsOffset + (j * kPackRows + r) * kLaneBytes + l % kLaneBytes];
            int v = sb % 2 == 0 ? (byte & kLow4) : (byte >> 4);
            if constexpr (kFive<Block>) {
              const uint8_t h = gb[kPackedQ5KQhOffset + ((l / kLaneBytes) * kPackRows + r) * kLaneBytes + l % kLaneBytes];
              v += (h >> sb) & 1 ? kQ5High : 0;
            }
            dot += v * act[b].qs[sb * kSubLen + l];
          }
          sumi += sc * dot;
          summ += m * (act[b].bsums[2 * sb] + act[b].bsums[2 * sb + 1]);
        }
        uint16_t d, dmin;
        std::memcpy(&d, gb + r * 2, 2);
        std::memcpy(&dmin, gb + kPackedQ4KDminOffset + r * 2, 2);
        acc += fp16_to_fp32(d) * act[b].d * static_cast<float>(sumi) -
               fp16_to_fp32(dmin) * act[b].d * static_cast<float>(summ);
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace

void pack_q4_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  pack_group<BlockQ4_K>(plain, row_bytes, n_blocks, packed);
}
void unpack_q4_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  unpack_group<BlockQ4_K>(packed, row_bytes, n_blocks, plain);
}
void pack_q5_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  pack_group<BlockQ5_K>(plain, row_bytes, n_blocks, packed);
}
void unpack_q5_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  unpack_group<BlockQ5_K>(packed, row_bytes, n_blocks, plain);
}
void packed_q4_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  packed_ref<BlockQ4_K>(group, a, t0, nt, y, ys);
}
void packed_q5_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  packed_ref<BlockQ5_K>(group, a, t0, nt, y, ys);
}

}  // namespace ferrite::cpu
