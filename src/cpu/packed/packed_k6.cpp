// Packing of Q6_K groups (layout in packed_k.h) and the plain reference of
// the packed product, read straight off the layout one value at a time.
#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ6_K;
using quant::BlockQ8_K;
using quant::kQKK;

constexpr int kLaneBytes = 4;
constexpr int kSubBlocks = 16;  // sub-blocks of 16 per super-block
constexpr int kSubLen = kQKK / kSubBlocks;
constexpr int kQlLanes = kQKK / 2 / kLaneBytes;  // 32
constexpr int kQhLanes = kQKK / 4 / kLaneBytes;  // 16
constexpr int32_t kQ6Offset = 32;

static_assert(sizeof(BlockQ6_K) * kPackRows == kPackedQ6KBlockBytes);

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
void convert(uint8_t* gb, BlockQ6_K* blk, int64_t r) {
  move_bytes<kPack>(gb + r * 2, reinterpret_cast<uint8_t*>(&blk->d), 2);
  for (int sb = 0; sb < kSubBlocks; ++sb) {
    move_bytes<kPack>(gb + kPackedQ6KScOffset + sb * kPackRows + r, reinterpret_cast<uint8_t*>(blk->scales + sb), 1);
  }
  for (int j = 0; j < kQlLanes; ++j) {
    move_bytes<kPack>(gb + kPackedQ6KQlOffset + (j * kPackRows + r) * kLaneBytes, blk->ql + j * kLaneBytes, kLaneBytes);
  }
  for (int j = 0; j < kQhLanes; ++j) {
    move_bytes<kPack>(gb + kPackedQ6KQhOffset + (j * kPackRows + r) * kLaneBytes, blk->qh + j * kLaneBytes, kLaneBytes);
  }
}

}  // namespace

void pack_q6_k_group(const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* blk = const_cast<BlockQ6_K*>(reinterpret_cast<const BlockQ6_K*>(plain + r * row_bytes) + b);
      convert<true>(packed + b * kPackedQ6KBlockBytes, blk, r);  // reads blk only
    }
  }
}

void unpack_q6_k_group(const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* gb = const_cast<uint8_t*>(packed + b * kPackedQ6KBlockBytes);  // read only
      convert<false>(gb, reinterpret_cast<BlockQ6_K*>(plain + r * row_bytes) + b, r);
    }
  }
}

// Value of element e (0..255) of row r in a packed group super-block, 0..63.
int32_t q6_value(const uint8_t* gb, int64_t r, int e) {
  const int half = e / 128, c = (e % 128) / 32, l = e % 32;
  const int ql_byte = 64 * half + (c % 2) * 32 + l;
  const int qh_byte = 32 * half + l;
  const uint8_t ql = gb[kPackedQ6KQlOffset + ((ql_byte / kLaneBytes) * kPackRows + r) * kLaneBytes + ql_byte % kLaneBytes];
  const uint8_t qh = gb[kPackedQ6KQhOffset + ((qh_byte / kLaneBytes) * kPackRows + r) * kLaneBytes + qh_byte % kLaneBytes];
  const int nib = c < 2 ? (ql & 0x0F) : (ql >> 4);
  return nib | (((qh >> (2 * c)) & 3) << 4);
}

void packed_q6_k_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < nt; ++t) {
    const auto* act = reinterpret_cast<const BlockQ8_K*>(a.q8 + (t0 + t) * a.row_bytes);
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * kPackedQ6KBlockBytes;
        int32_t sumi = 0;
        for (int sb = 0; sb < kSubBlocks; ++sb) {
          int32_t dot = 0;
          for (int l = 0; l < kSubLen; ++l) dot += q6_value(gb, r, sb * kSubLen + l) * act[b].qs[sb * kSubLen + l];
          dot -= kQ6Offset * act[b].bsums[sb];
          sumi += static_cast<int8_t>(gb[kPackedQ6KScOffset + sb * kPackRows + r]) * dot;
        }
        uint16_t d;
        std::memcpy(&d, gb + r * 2, 2);
        acc += fp16_to_fp32(d) * act[b].d * static_cast<float>(sumi);
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace ferrite::cpu
