// Plain reference of the lattice (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S) and IQ4_XS products with Q8_K activations: per 256-value
// block an exact integer sum of weight value times activation (the weight
// in units of d_w c, quant_dot_iq.h), then sum += d_w * d_a * sumi in block
// order, and the constant c at the end, as llama.cpp's scalar products do.
// IQ1: llama.cpp sums grid * a and delta * a apart and adds them as
// sumi + sumi1 / 8; here (8 grid + delta) * a in one integer, which is the
// same number exactly (|sum| < 2^24, so both are exact in float).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/fp16.h"
#include "cpu/dot/quant_dot_iq.h"
#include "quant/blocks.h"
#include "quant/iq_grids.h"

namespace ferrite::cpu {
namespace {

using quant::BlockIQ1_M;
using quant::BlockIQ1_S;
using quant::BlockIQ2_S;
using quant::BlockIQ2_XS;
using quant::BlockIQ2_XXS;
using quant::BlockIQ3_S;
using quant::BlockIQ3_XXS;
using quant::BlockIQ4_XS;
using quant::BlockQ8_K;
using quant::grid_byte;
using quant::iq2_sign_byte;
using quant::kQKK;

constexpr int kSub = 32;  // values per sub-block (one scale, one qh entry)
constexpr int kGroup = 8;  // values per grid entry / sign byte
constexpr int kIq1DeltaUnits = 8;  // IQ1 grid values in units of the delta (1/8)

// 2 s + 1: the odd 4-bit (or 3-bit) scales of the IQ1/2/3 types.
inline int32_t odd_scale(uint32_t s) { return 2 * static_cast<int32_t>(s) + 1; }

// sum_j sign_j * mag_j * a_j over the 8 values of one grid entry (one byte
// per magnitude, element 0 lowest), bit j of `signs` set = negative.
inline int32_t signed_group(uint64_t entry, uint8_t signs, const int8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < kGroup; ++j) {
    const int32_t v = grid_byte(entry, j) * a[j];
    s += (signs >> j) & 1u ? -v : v;
  }
  return s;
}

// Two 4-value IQ3 grid entries as one 8-value entry.
inline uint64_t pair4(uint32_t lo, uint32_t hi) { return lo | static_cast<uint64_t>(hi) << 32; }

int32_t sum_iq2_xxs(const BlockIQ2_XXS& w, const int8_t* a) {
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    uint32_t aux[2];  // four grid indices; four 7-bit sign indices and the scale
    std::memcpy(aux, w.qs + 4 * ib, sizeof aux);
    int32_t s = 0;
    for (int l = 0; l < 4; ++l, a += kGroup) {
      s += signed_group(quant::kIq2xxsGrid[(aux[0] >> (8 * l)) & 0xFF], iq2_sign_byte((aux[1] >> (7 * l)) & 0x7F), a);
    }
    total += odd_scale(aux[1] >> 28) * s;
  }
  return total;
}

int32_t sum_iq2_xs(const BlockIQ2_XS& w, const int8_t* a) {
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    for (int half = 0; half < 2; ++half) {
      int32_t s = 0;
      for (int l = 2 * half; l < 2 * half + 2; ++l, a += kGroup) {
        const uint16_t q = w.qs[4 * ib + l];
        s += signed_group(quant::kIq2xsGrid[q & 0x1FF], iq2_sign_byte(q >> 9), a);
      }
      total += odd_scale((w.scales[ib] >> (4 * half)) & 0xF) * s;
    }
  }
  return total;
}

int32_t sum_iq2_s(const BlockIQ2_S& w, const int8_t* a) {
  const uint8_t* signs = w.qs + kQKK / 8;
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    for (int half = 0; half < 2; ++half) {
      int32_t s = 0;
      for (int l = 2 * half; l < 2 * half + 2; ++l, a += kGroup) {
        const int index = w.qs[4 * ib + l] | ((w.qh[ib] << (8 - 2 * l)) & 0x300);
        s += signed_group(quant::kIq2sGrid[index], signs[4 * ib + l], a);
      }
      total += odd_scale((w.scales[ib] >> (4 * half)) & 0xF) * s;
    }
  }
  return total;
}

int32_t sum_iq3_xxs(const BlockIQ3_XXS& w, const int8_t* a) {
  const uint8_t* scales_and_signs = w.qs + kQKK / 4;
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    uint32_t aux;
    std::memcpy(&aux, scales_and_signs + 4 * ib, sizeof aux);
    const uint8_t* q = w.qs + 8 * ib;
    int32_t s = 0;
    for (int l = 0; l < 4; ++l, a += kGroup) {
      const uint64_t entry = pair4(quant::kIq3xxsGrid[q[2 * l]], quant::kIq3xxsGrid[q[2 * l + 1]]);
      s += signed_group(entry, iq2_sign_byte((aux >> (7 * l)) & 0x7F), a);
    }
    total += odd_scale(aux >> 28) * s;
  }
  return total;
}

int32_t sum_iq3_s(const BlockIQ3_S& w, const int8_t* a) {
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    const uint8_t* q = w.qs + 8 * ib;
    const int qh = w.qh[ib];
    int32_t s = 0;
    for (int l = 0; l < 4; ++l, a += kGroup) {
      const int i1 = q[2 * l] | ((qh << (8 - 2 * l)) & 0x100);
      const int i2 = q[2 * l + 1] | ((qh << (7 - 2 * l)) & 0x100);
      s += signed_group(pair4(quant::kIq3sGrid[i1], quant::kIq3sGrid[i2]), w.signs[4 * ib + l], a);
    }
    total += odd_scale((w.scales[ib / 2] >> (4 * (ib % 2))) & 0xF) * s;
  }
  return total;
}

// sum_j (8 grid_j + delta) a_j over one IQ1 grid entry (signed bytes -1, 0, 1).
inline int32_t iq1_group(uint64_t entry, int delta, const int8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < kGroup; ++j) {
    s += (kIq1DeltaUnits * static_cast<int8_t>(grid_byte(entry, j)) + delta) * a[j];
  }
  return s;
}

int32_t sum_iq1_s(const BlockIQ1_S& w, const int8_t* a) {
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    const uint16_t qh = w.qh[ib];
    const int delta = (qh & 0x8000) != 0 ? -1 : 1;
    int32_t s = 0;
    for (int l = 0; l < 4; ++l, a += kGroup) {
      s += iq1_group(quant::kIq1sGrid[w.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)], delta, a);
    }
    total += odd_scale((qh >> 12) & 7) * s;
  }
  return total;
}

// IQ1_M: the f16 block scale is spread over the top nibbles of its four
// 16-bit scale words.
float iq1_m_scale(const BlockIQ1_M& w) {
  uint16_t sc[4];
  std::memcpy(sc, w.scales, sizeof sc);
  const auto bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                          (sc[3] & 0xF000));
  return fp16_to_fp32(bits);
}

int32_t sum_iq1_m(const BlockIQ1_M& w, const int8_t* a) {
  uint16_t sc[4];
  std::memcpy(sc, w.scales, sizeof sc);
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib) {
    for (int l = 0; l < 4; ++l, a += kGroup) {
      const uint8_t qh = w.qh[2 * ib + l / 2];
      const int high = l % 2 == 0 ? (qh << 8) & 0x700 : (qh << 4) & 0x700;
      const int delta = (qh & (l % 2 == 0 ? 0x08 : 0x80)) != 0 ? -1 : 1;
      const int32_t ls = odd_scale((sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7);
      total += ls * iq1_group(quant::kIq1sGrid[w.qs[4 * ib + l] | high], delta, a);
    }
  }
  return total;
}

int32_t sum_iq4_xs(const BlockIQ4_XS& w, const int8_t* a) {
  constexpr int kScaleBias = 32;
  int32_t total = 0;
  for (int ib = 0; ib < kQKK / kSub; ++ib, a += kSub) {
    const int ls = ((w.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((w.scales_h >> (2 * ib)) & 3) << 4);
    const uint8_t* q = w.qs + 16 * ib;
    int32_t s = 0;
    for (int j = 0; j < kSub / 2; ++j) {
      s += quant::kIq4nlValues[q[j] & 0xF] * a[j] + quant::kIq4nlValues[q[j] >> 4] * a[j + kSub / 2];
    }
    total += (ls - kScaleBias) * s;
  }
  return total;
}

template <typename Block>
float block_scale(const Block& w) {
  if constexpr (std::is_same_v<Block, BlockIQ1_M>) {
    return iq1_m_scale(w);
  } else {
    return fp16_to_fp32(w.d);
  }
}

// sum_b d_w * d_a * sumi_b in block order, then times c.
template <typename Block, int32_t (*kSum)(const Block&, const int8_t*)>
float dot(const void* w_row, const void* act_row, int64_t k, float c) {
  const auto* w = static_cast<const Block*>(w_row);
  const auto* a = static_cast<const BlockQ8_K*>(act_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQKK; ++b) {
    sum += block_scale(w[b]) * a[b].d * static_cast<float>(kSum(w[b], a[b].qs));
  }
  return sum * c;
}

constexpr float kEighth = 0.125f, kQuarter = 0.25f;

float dot_iq2_xxs(const void* w, const void* a, int64_t k) { return dot<BlockIQ2_XXS, sum_iq2_xxs>(w, a, k, kEighth); }
float dot_iq2_xs(const void* w, const void* a, int64_t k) { return dot<BlockIQ2_XS, sum_iq2_xs>(w, a, k, kEighth); }
float dot_iq2_s(const void* w, const void* a, int64_t k) { return dot<BlockIQ2_S, sum_iq2_s>(w, a, k, kEighth); }
float dot_iq3_xxs(const void* w, const void* a, int64_t k) {
  return dot<BlockIQ3_XXS, sum_iq3_xxs>(w, a, k, kQuarter);
}
float dot_iq3_s(const void* w, const void* a, int64_t k) { return dot<BlockIQ3_S, sum_iq3_s>(w, a, k, 1.0f); }
float dot_iq1_s(const void* w, const void* a, int64_t k) { return dot<BlockIQ1_S, sum_iq1_s>(w, a, k, kEighth); }
float dot_iq1_m(const void* w, const void* a, int64_t k) { return dot<BlockIQ1_M, sum_iq1_m>(w, a, k, kEighth); }
float dot_iq4_xs(const void* w, const void* a, int64_t k) { return dot<BlockIQ4_XS, sum_iq4_xs>(w, a, k, 1.0f); }

// The K types' activation format and quantizer, with a dot of these.
QuantDot q8_k_dot(float (*fn)(const void*, const void*, int64_t)) {
  QuantDot q = *quant_dot_ref(TensorType::Q4_K);
  q.dot = fn;
  q.tile = nullptr;
  return q;
}

}  // namespace

const QuantDot* quant_dot_iq_ref(TensorType type) {
  static const QuantDot iq2_xxs = q8_k_dot(dot_iq2_xxs), iq2_xs = q8_k_dot(dot_iq2_xs), iq2_s = q8_k_dot(dot_iq2_s),
                        iq3_xxs = q8_k_dot(dot_iq3_xxs), iq3_s = q8_k_dot(dot_iq3_s), iq1_s = q8_k_dot(dot_iq1_s),
                        iq1_m = q8_k_dot(dot_iq1_m), iq4_xs = q8_k_dot(dot_iq4_xs);
  switch (type) {
    case TensorType::IQ2_XXS:
      return &iq2_xxs;
    case TensorType::IQ2_XS:
      return &iq2_xs;
    case TensorType::IQ2_S:
      return &iq2_s;
    case TensorType::IQ3_XXS:
      return &iq3_xxs;
    case TensorType::IQ3_S:
      return &iq3_s;
    case TensorType::IQ1_S:
      return &iq1_s;
    case TensorType::IQ1_M:
      return &iq1_m;
    case TensorType::IQ4_XS:
      return &iq4_xs;
    default:
      if (const QuantDot* q = quant_dot_legacy_ref(type)) return q;
      return quant_dot_ternary_ref(type);
  }
}

}  // namespace ferrite::cpu
