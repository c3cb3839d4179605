// Quantizers of the 3-bit lattice types IQ3_XXS and IQ3_S: the shared grid
// search (iq_quantize.h) per super-block, then the on-disk packing.
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_quantize.h"
#include "quant/iq_row.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant::ref {

void quantize_iq3_xxs(const float* x, void* dst, int64_t n, const float* importance) {
  // scale of 32 = d * (0.5 + s) * 0.5; signs: 7 bits per 8 with even parity.
  const IqLayout lay{&IqGrid::of(TensorType::IQ3_XXS), 32, 0.5f, 0.5f, 15, IqSigns::kEvenParity};
  auto* b = static_cast<BlockIQ3_XXS*>(dst);
  for_each_super_block(x, n, importance, lay, [&](int64_t i, const IqSuperBlock& r) {
    b[i].d = r.d;
    uint8_t* grid_index = b[i].qs;
    uint8_t* signs_scales = b[i].qs + kQKK / 4;
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      uint32_t aux = static_cast<uint32_t>(r.code[ib]) << 28;
      for (int l = 0; l < 4; ++l) aux |= static_cast<uint32_t>(r.sign[4 * ib + l] & 127) << (7 * l);
      std::memcpy(signs_scales + 4 * ib, &aux, sizeof(aux));
      for (int k = 0; k < 8; ++k) grid_index[8 * ib + k] = static_cast<uint8_t>(r.entry[8 * ib + k]);
    }
  });
}

void quantize_iq3_s(const float* x, void* dst, int64_t n, const float* importance) {
  // scale of 32 = d * (1 + 2 s); explicit sign bits; 9-bit grid indices.
  const IqLayout lay{&IqGrid::of(TensorType::IQ3_S), 32, 2.0f, 0.5f, 15, IqSigns::kFree};
  auto* b = static_cast<BlockIQ3_S*>(dst);
  for_each_super_block(x, n, importance, lay, [&](int64_t i, const IqSuperBlock& r) {
    b[i].d = r.d;
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    for (int ib = 0; ib < kQKK / 32; ++ib) {
      b[i].scales[ib / 2] = static_cast<uint8_t>(b[i].scales[ib / 2] | (r.code[ib] << (4 * (ib % 2))));
      for (int k = 0; k < 8; ++k) {
        const int e = r.entry[8 * ib + k];
        b[i].qs[8 * ib + k] = static_cast<uint8_t>(e & 0xFF);
        b[i].qh[ib] = static_cast<uint8_t>(b[i].qh[ib] | ((e >> 8) << k));
      }
      for (int l = 0; l < 4; ++l) b[i].signs[4 * ib + l] = r.sign[4 * ib + l];
    }
  });
}

}  // namespace ferrite::quant::ref
