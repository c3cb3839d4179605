// Reference dequantizers of the IQ (lattice / non-linear) types.
#include <cstring>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/dequant_ref.h"
#include "quant/iq_grids.h"

namespace ferrite::quant::ref {

namespace {

inline float sign_of(uint8_t signs, int j) { return (signs >> j) & 1u ? -1.f : 1.f; }

// Eight elements db * grid * sign from one 8-byte grid entry.
inline void put8(float* y, float db, uint64_t entry, uint8_t signs) {
  for (int j = 0; j < 8; ++j) y[j] = db * static_cast<float>(grid_byte(entry, j)) * sign_of(signs, j);
}

// Four elements from a 4-byte grid entry with signs bits [first, first + 4).
inline void put4(float* y, float db, uint32_t entry, uint8_t signs, int first) {
  for (int j = 0; j < 4; ++j) {
    y[j] = db * static_cast<float>(static_cast<uint8_t>(entry >> (8 * j))) * sign_of(signs, first + j);
  }
}

// IQ2/IQ3 4-bit block scale: (0.5 + s) in units of d, times `unit`.
inline float half_scale(float d, uint32_t s, float unit) { return d * (0.5f + static_cast<float>(s)) * unit; }

}  // namespace

void dequant_iq2_xxs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ2_XXS*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      uint32_t aux[2];
      std::memcpy(aux, b[i].qs + 4 * ib, sizeof(aux));
      const float db = half_scale(d, aux[1] >> 28, 0.25f);
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint8_t index = static_cast<uint8_t>(aux[0] >> (8 * l));
        put8(dst, db, kIq2xxsGrid[index], iq2_sign_byte((aux[1] >> (7 * l)) & 127));
      }
    }
  }
}

void dequant_iq2_xs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ2_XS*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      const float db[2] = {half_scale(d, b[i].scales[ib] & 0xF, 0.25f), half_scale(d, b[i].scales[ib] >> 4, 0.25f)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint16_t q = b[i].qs[4 * ib + l];
        put8(dst, db[l / 2], kIq2xsGrid[q & 511], iq2_sign_byte(q >> 9));
      }
    }
  }
}

void dequant_iq2_s(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ2_S*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* qs = b[i].qs;
    const uint8_t* signs = b[i].qs + kQKK / 8;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4, signs += 4) {
      const float db[2] = {half_scale(d, b[i].scales[ib] & 0xF, 0.25f), half_scale(d, b[i].scales[ib] >> 4, 0.25f)};
      for (int l = 0; l < 4; ++l, dst += 8) {
        const int index = qs[l] | ((b[i].qh[ib] << (8 - 2 * l)) & 0x300);
        put8(dst, db[l / 2], kIq2sGrid[index], signs[l]);
      }
    }
  }
}

void dequant_iq3_xxs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ3_XXS*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* qs = b[i].qs;
    const uint8_t* scales_and_signs = b[i].qs + kQKK / 4;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 8) {
      uint32_t aux;
      std::memcpy(&aux, scales_and_signs + 4 * ib, sizeof(aux));
      const float db = half_scale(d, aux >> 28, 0.5f);
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint8_t signs = iq2_sign_byte((aux >> (7 * l)) & 127);
        put4(dst, db, kIq3xxsGrid[qs[2 * l]], signs, 0);
        put4(dst + 4, db, kIq3xxsGrid[qs[2 * l + 1]], signs, 4);
      }
    }
  }
}

void dequant_iq3_s(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ3_S*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* qs = b[i].qs;
    const uint8_t* signs = b[i].signs;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 8, signs += 4) {
      const int s = (b[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
      const float db = d * static_cast<float>(1 + 2 * s);
      const uint8_t qh = b[i].qh[ib];
      for (int l = 0; l < 4; ++l, dst += 8) {
        const int i1 = qs[2 * l] | ((qh << (8 - 2 * l)) & 256);
        const int i2 = qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256);
        put4(dst, db, kIq3sGrid[i1], signs[l], 0);
        put4(dst + 4, db, kIq3sGrid[i2], signs[l], 4);
      }
    }
  }
}

namespace {
// Eight elements dl * (grid + delta) of an IQ1 grid entry (signed bytes).
inline void put_iq1(float* y, float dl, uint64_t entry, float delta) {
  for (int j = 0; j < 8; ++j) y[j] = dl * (static_cast<float>(static_cast<int8_t>(grid_byte(entry, j))) + delta);
}
}  // namespace

void dequant_iq1_s(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ1_S*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* qs = b[i].qs;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4) {
      const uint16_t qh = b[i].qh[ib];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, dst += 8) {
        put_iq1(dst, dl, kIq1sGrid[qs[l] | (((qh >> (3 * l)) & 7) << 8)], delta);
      }
    }
  }
}

void dequant_iq1_m(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ1_M*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    uint16_t sc[4];
    std::memcpy(sc, b[i].scales, sizeof(sc));
    const auto scale_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                  (sc[3] & 0xF000));
    const float d = fp16_to_fp32(scale_bits);
    const uint8_t* qs = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 4, qh += 2) {
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
      const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                          qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
      const float delta[4] = {(qh[0] & 0x08) ? -kIq1Delta : kIq1Delta, (qh[0] & 0x80) ? -kIq1Delta : kIq1Delta,
                              (qh[1] & 0x08) ? -kIq1Delta : kIq1Delta, (qh[1] & 0x80) ? -kIq1Delta : kIq1Delta};
      for (int l = 0; l < 4; ++l, dst += 8) put_iq1(dst, l < 2 ? dl1 : dl2, kIq1sGrid[idx[l]], delta[l]);
    }
  }
}

void dequant_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_fp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] & 0xF]);
      dst[j + kQK / 2] = d * static_cast<float>(kIq4nlValues[b[i].qs[j] >> 4]);
    }
  }
}

void dequant_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = fp16_to_fp32(b[i].d);
    const uint8_t* qs = b[i].qs;
    for (int ib = 0; ib < kQKK / 32; ++ib, qs += 16, dst += 32) {
      const int ls = iq4_xs_scale(b[i].scales_l, b[i].scales_h, ib);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xF]);
        dst[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace ferrite::quant::ref
