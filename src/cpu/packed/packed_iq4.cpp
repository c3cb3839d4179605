// Packing of IQ4_XS groups (layout in packed_k.h) and the plain reference of
// the packed product, read straight off the layout one value at a time.
#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ4_XS;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kLaneBytes = 4;
constexpr int kSubBlocks = kQKK / 32;
constexpr int kScaleBias = 32;

static_assert(sizeof(BlockIQ4_XS) * kPackRows == kPackedIq4XsBlockBytes);

// Copies n bytes between the packed group and a plain block, in the direction kPack says.
template <bool kPack>
void move_bytes(uint8_t* packed, uint8_t* plain, size_t n) {
  if constexpr (kPack) {
    std::memcpy(packed, plain, n);
  } else {
    std::memcpy(plain, packed, n);
  }
}

// Row r of a group super-block <-> its plain block (pack reads blk, unpack reads gb).
template <bool kPack>
void convert(uint8_t* gb, BlockIQ4_XS* blk, int64_t r) {
  move_bytes<kPack>(gb + r * 2, reinterpret_cast<uint8_t*>(&blk->d), 2);
  move_bytes<kPack>(gb + kPackedIq4XsScalesHOffset + r * 2, reinterpret_cast<uint8_t*>(&blk->scales_h), 2);
  for (int i = 0; i < kQKK / 64; ++i) {
    move_bytes<kPack>(gb + kPackedIq4XsScalesLOffset + i * kPackRows + r, blk->scales_l + i, 1);
  }
  for (int j = 0; j < kQKK / 2 / kLaneBytes; ++j) {
    move_bytes<kPack>(gb + kPackedIq4XsQsOffset + (j * kPackRows + r) * kLaneBytes, blk->qs + j * kLaneBytes, kLaneBytes);
  }
}

}  // namespace

void pack_iq4_xs_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* blk = const_cast<BlockIQ4_XS*>(reinterpret_cast<const BlockIQ4_XS*>(plain + r * row_bytes) + b);
      convert<true>(packed + b * kPackedIq4XsBlockBytes, blk, r);  // reads blk only
    }
  }
}

void unpack_iq4_xs_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* gb = const_cast<uint8_t*>(packed + b * kPackedIq4XsBlockBytes);  // read only
      convert<false>(gb, reinterpret_cast<BlockIQ4_XS*>(plain + r * row_bytes) + b, r);
    }
  }
}

void packed_iq4_xs_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * kPackedIq4XsBlockBytes;
        uint16_t d, sh;
        std::memcpy(&d, gb + r * 2, 2);
        std::memcpy(&sh, gb + kPackedIq4XsScalesHOffset + r * 2, 2);
        int32_t sumi = 0;
        for (int ib = 0; ib < kSubBlocks; ++ib) {
          const uint8_t sl = gb[kPackedIq4XsScalesLOffset + (ib / 2) * kPackRows + r];
          const int ls = ((sl >> (4 * (ib % 2))) & 0xF) | (((sh >> (2 * ib)) & 3) << 4);
          int32_t s = 0;
          for (int j = 0; j < 16; ++j) {
            const int byte = 16 * ib + j;  // qs byte of this row
            const uint8_t q = gb[kPackedIq4XsQsOffset + ((byte / kLaneBytes) * kPackRows + r) * kLaneBytes + byte % kLaneBytes];
            s += quant::kIq4nlValues[q & 0xF] * act[b].qs[32 * ib + j] + quant::kIq4nlValues[q >> 4] * act[b].qs[32 * ib + 16 + j];
          }
          sumi += (ls - kScaleBias) * s;
        }
        acc += fp16_to_fp32(d) * act[b].d * static_cast<float>(sumi);
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace ferrite::cpu
