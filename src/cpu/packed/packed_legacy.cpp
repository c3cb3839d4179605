// Packing of the Q4_1 / Q5_0 / Q5_1 / IQ4_NL / MXFP4 groups (packed_legacy.h) and
// the plain reference of their products, read straight off the layout one
// value at a time.
#include "cpu/packed/packed_legacy.h"

#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cpu {
namespace {

using quant::BlockQ8_0;
using quant::kQK;

constexpr int64_t kLaneBytes = 4;

// Where a type keeps its parts, in the plain block and in the group block.
struct Parts {
  size_t block = 0;      // plain block bytes
  int d = 2;             // bytes of the scale (f16 d; MXFP4's E8M0 byte: 1)
  int m = -1, qh = -1;   // plain offsets of m and qh (-1: none)
  int qs = 0;            // plain offset of qs
  int64_t g_m = 0, g_qh = 0, g_qs = 0;  // group offsets
  int64_t group = 0;     // group block bytes
};

Parts parts_of(TensorType t) {
  Parts p;
  const bool has_m = t == TensorType::Q4_1 || t == TensorType::Q5_1;
  const bool has_qh = t == TensorType::Q5_0 || t == TensorType::Q5_1;
  p.d = t == TensorType::MXFP4 ? 1 : 2;
  p.m = has_m ? p.d : -1;
  p.qh = has_qh ? (has_m ? 4 : 2) : -1;
  p.qs = p.d + (has_m ? 2 : 0) + (has_qh ? 4 : 0);
  p.block = static_cast<size_t>(p.qs + kQK / 2);
  p.g_m = kPackRows * p.d;
  p.g_qh = p.g_m + (has_m ? kPackRows * 2 : 0);
  p.g_qs = p.g_qh + (has_qh ? kPackRows * 4 : 0);
  p.group = static_cast<int64_t>(p.block) * kPackRows;
  return p;
}

template <bool kPack>
void move_bytes(uint8_t* packed, uint8_t* plain, size_t n) {
  if constexpr (kPack) {
    std::memcpy(packed, plain, n);
  } else {
    std::memcpy(plain, packed, n);
  }
}

// Row r of group block gb <-> its plain block (pack reads blk, unpack reads gb).
template <bool kPack>
void convert(const Parts& p, uint8_t* gb, uint8_t* blk, int64_t r) {
  move_bytes<kPack>(gb + r * p.d, blk, static_cast<size_t>(p.d));
  if (p.m >= 0) move_bytes<kPack>(gb + p.g_m + r * 2, blk + p.m, 2);
  if (p.qh >= 0) move_bytes<kPack>(gb + p.g_qh + r * 4, blk + p.qh, 4);
  for (int64_t j = 0; j < kQK / 2 / kLaneBytes; ++j) {
    move_bytes<kPack>(gb + p.g_qs + (j * kPackRows + r) * kLaneBytes, blk + p.qs + j * kLaneBytes, kLaneBytes);
  }
}

// Element e (0..31) of row r in group block gb: its integer value (Q5_0
// without the -16, which the formula takes off through the sums).
int32_t value(TensorType t, const Parts& p, const uint8_t* gb, int64_t r, int e) {
  const int byte = e % 16;
  const uint8_t q = gb[p.g_qs + ((byte / kLaneBytes) * kPackRows + r) * kLaneBytes + byte % kLaneBytes];
  const int nib = e < 16 ? (q & 0x0F) : (q >> 4);
  if (t == TensorType::IQ4_NL) return quant::kIq4nlValues[nib];
  if (t == TensorType::MXFP4) return quant::kMxfp4Values[nib];
  if (p.qh < 0) return nib;
  uint32_t qh;
  std::memcpy(&qh, gb + p.g_qh + r * 4, 4);
  return nib | static_cast<int32_t>(((qh >> e) & 1) << 4);
}

template <TensorType kType>
void packed_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  const Parts p = parts_of(kType);
  for (int64_t t = 0; t < nt; ++t) {
    const int64_t tok = t0 + t;
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * p.group;
        const auto* ab = reinterpret_cast<const BlockQ8_0*>(a.q8 + tok * a.row_bytes) + b;
        int32_t s = kType == TensorType::Q5_0 ? -16 * a.sum[tok * a.n_blocks + b] : 0;
        for (int e = 0; e < kQK; ++e) s += value(kType, p, gb, r, e) * ab->qs[e];
        uint16_t d16 = 0;
        if constexpr (kType != TensorType::MXFP4) std::memcpy(&d16, gb + r * 2, 2);
        const float dw = kType == TensorType::MXFP4 ? quant::mxfp4_scale(gb[r]) : fp16_to_fp32(d16);
        const float da = a.d[tok * a.n_blocks + b];
        if constexpr (kType == TensorType::Q4_1 || kType == TensorType::Q5_1) {
          uint16_t m;
          std::memcpy(&m, gb + p.g_m + r * 2, 2);
          acc += dw * da * static_cast<float>(s) + fp16_to_fp32(m) * a.s[tok * a.n_blocks + b];
        } else {
          acc = std::fma(static_cast<float>(s), dw * da, acc);
        }
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace

bool packed_legacy_type(TensorType t) {
  return t == TensorType::Q4_1 || t == TensorType::Q5_0 || t == TensorType::Q5_1 || t == TensorType::IQ4_NL ||
         t == TensorType::MXFP4;
}

int64_t packed_legacy_block_bytes(TensorType type) { return parts_of(type).group; }

void pack_legacy_group(TensorType type, const uint8_t* plain, size_t row_bytes, int64_t n_blocks, uint8_t* packed) {
  const Parts p = parts_of(type);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* blk = const_cast<uint8_t*>(plain + r * row_bytes + static_cast<size_t>(b) * p.block);  // read only
      convert<true>(p, packed + b * p.group, blk, r);
    }
  }
}

void unpack_legacy_group(TensorType type, const uint8_t* packed, size_t row_bytes, int64_t n_blocks, uint8_t* plain) {
  const Parts p = parts_of(type);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      auto* gb = const_cast<uint8_t*>(packed + b * p.group);  // read only
      convert<false>(p, gb, plain + r * row_bytes + static_cast<size_t>(b) * p.block, r);
    }
  }
}

PackedKernel packed_legacy_ref(TensorType type) {
  switch (type) {
    case TensorType::Q4_1:
      return packed_ref<TensorType::Q4_1>;
    case TensorType::Q5_0:
      return packed_ref<TensorType::Q5_0>;
    case TensorType::Q5_1:
      return packed_ref<TensorType::Q5_1>;
    case TensorType::IQ4_NL:
      return packed_ref<TensorType::IQ4_NL>;
    case TensorType::MXFP4:
      return packed_ref<TensorType::MXFP4>;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
