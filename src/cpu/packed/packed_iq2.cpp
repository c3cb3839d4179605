// Packing of IQ2_XXS groups (layout in packed_k.h) and the plain reference of
// the packed product, read straight off the layout one value at a time.
#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ2_XXS;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kSubBlocks = kQKK / 32;
constexpr int kGroups = 4;      // 8-value grid entries per sub-block
constexpr int kLaneBytes = 4;   // bytes per row and sub-block in each section

static_assert(sizeof(BlockIQ2_XXS) * kPackRows == kPackedIq2XxsBlockBytes);

// Bit j = s_0 ^ ... ^ s_j of the 7-bit sign index s.
uint8_t prefix_parity(uint32_t s) {
  s ^= s << 1;
  s ^= s << 2;
  s ^= s << 4;
  return static_cast<uint8_t>(s & 0x7F);
}

// The eight sign bits of a sign-and-scale byte (bit 7: the parity of the others).
uint8_t signs_of(uint8_t b) {
  const auto p = static_cast<uint8_t>(b & 0xFE);
  return static_cast<uint8_t>(p ^ (p >> 1));
}

size_t index_at(int ib, int64_t r) { return kPackedIq2XxsIndexOffset + (ib * kPackRows + r) * kLaneBytes; }
size_t sign_at(int ib, int64_t r) { return kPackedIq2XxsSignOffset + (ib * kPackRows + r) * kLaneBytes; }

}  // namespace

void pack_iq2_xxs_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    uint8_t* gb = packed + b * kPackedIq2XxsBlockBytes;
    for (int64_t r = 0; r < kPackRows; ++r) {
      const auto& blk = reinterpret_cast<const BlockIQ2_XXS*>(plain + r * row_bytes)[b];
      std::memcpy(gb + 2 * r, &blk.d, 2);
      for (int ib = 0; ib < kSubBlocks; ++ib) {
        uint32_t aux[2];  // four grid indices; four 7-bit sign indices and the scale
        std::memcpy(aux, blk.qs + 4 * ib, sizeof aux);
        std::memcpy(gb + index_at(ib, r), &aux[0], kLaneBytes);
        for (int l = 0; l < kGroups; ++l) {
          gb[sign_at(ib, r) + l] =
              static_cast<uint8_t>(prefix_parity((aux[1] >> (7 * l)) & 0x7F) << 1 | ((aux[1] >> (28 + l)) & 1));
        }
      }
    }
  }
}

void unpack_iq2_xxs_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* gb = packed + b * kPackedIq2XxsBlockBytes;
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto& blk = reinterpret_cast<BlockIQ2_XXS*>(plain + r * row_bytes)[b];
      std::memcpy(&blk.d, gb + 2 * r, 2);
      for (int ib = 0; ib < kSubBlocks; ++ib) {
        uint32_t aux[2] = {0, 0};
        std::memcpy(&aux[0], gb + index_at(ib, r), kLaneBytes);
        for (int l = 0; l < kGroups; ++l) {
          const uint8_t byte = gb[sign_at(ib, r) + l];
          aux[1] |= (signs_of(byte) & 0x7Fu) << (7 * l) | static_cast<uint32_t>(byte & 1) << (28 + l);
        }
        std::memcpy(blk.qs + 4 * ib, aux, sizeof aux);
      }
    }
  }
}

void packed_iq2_xxs_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * kPackedIq2XxsBlockBytes;
        uint16_t d;
        std::memcpy(&d, gb + 2 * r, 2);
        int32_t sumi = 0;
        for (int ib = 0; ib < kSubBlocks; ++ib) {
          int32_t s = 0, scale = 0;
          for (int l = 0; l < kGroups; ++l) {
            const uint64_t entry = quant::kIq2xxsGrid[gb[index_at(ib, r) + l]];
            const uint8_t byte = gb[sign_at(ib, r) + l];
            const uint8_t signs = signs_of(byte);
            scale |= (byte & 1) << l;
            for (int j = 0; j < 8; ++j) {
              const int32_t v = quant::grid_byte(entry, j) * act[b].qs[32 * ib + 8 * l + j];
              s += (signs >> j) & 1u ? -v : v;
            }
          }
          sumi += (2 * scale + 1) * s;
        }
        acc += fp16_to_fp32(d) * act[b].d * static_cast<float>(sumi);
      }
      y[t * ys + r] = acc * 0.125f;
    }
  }
}

}  // namespace ferrite::cpu
