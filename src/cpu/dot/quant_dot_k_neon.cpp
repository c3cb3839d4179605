// NEON (aarch64, dot product extension) dot products of K-quant and IQ4_XS
// weight rows (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS) with Q8_K activations.
// The blocks are decoded to signed bytes and multiplied by SDOT (vdotq_s32:
// four int8 products into each int32 lane) as quant_decode_neon.h
// describes; the results equal quant_dot_ref.cpp's bit for bit.
//
// Tiles of up to 4 rows x 4 tokens (quant_dot.h) decode each weight block
// once per row and reuse it for every token; each output still adds its
// block terms in block order, so tiles, dots and the reference agree.
// The activations are quantized by quantize_q8_k_neon (act_quant_neon.cpp),
// bit-identical to the reference quantizer.
#include <arm_neon.h>

#include <cstdint>

#include "cpu/dot/act_quant.h"
#include "cpu/dot/quant_decode_neon.h"
#include "cpu/dot/quant_dot_k.h"

namespace ferrite::cpu {
namespace {

using neon::block_term;
using neon::BlockQ8_K;
using quant::kQKK;

// y[t * ys + r] = the dot of weight row r with activation row t: per output,
// the block terms added in block order, as the reference adds them (so
// every tile shape equals the dot and the reference).
template <typename Kernel, int NR, int NT>
void k_tile(const uint8_t* w, size_t wrb, const uint8_t* act, size_t arb, int64_t k, float* y, int64_t ys) {
  using Block = typename Kernel::Block;
  float sum[NR][NT] = {};
  for (int64_t b = 0; b < k / kQKK; ++b) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      Kernel kern;
      kern.decode(reinterpret_cast<const Block*>(w + r * wrb)[b]);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) sum[r][t] += block_term(kern, reinterpret_cast<const BlockQ8_K*>(act + t * arb)[b]);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = sum[r][t];
  }
}

template <typename Kernel>
struct KTile {
  template <int NR, int NT>
  struct Shape {
    static void run(const uint8_t* w, size_t wrb, const uint8_t* a, size_t arb, int64_t k, float* y, int64_t ys) {
      k_tile<Kernel, NR, NT>(w, wrb, a, arb, k, y, ys);
    }
  };
};

template <typename Kernel>
float dot(const void* w_row, const void* act_row, int64_t k) {
  float y;
  k_tile<Kernel, 1, 1>(static_cast<const uint8_t*>(w_row), 0, static_cast<const uint8_t*>(act_row), 0, k, &y, 1);
  return y;
}

// The reference's activation format, with the NEON quantizer and these products.
template <typename Kernel>
QuantDot with_kernel(TensorType type) {
  QuantDot q = *quant_dot_ref(type);
  q.quantize = quantize_q8_k_neon;
  q.dot = dot<Kernel>;
  q.tile = neon::tile_by_shape<KTile<Kernel>::template Shape>;
  return q;
}

}  // namespace

const QuantDot* quant_dot_k_neon(TensorType type) {
  static const QuantDot q2_k = with_kernel<neon::Q23K<false>>(TensorType::Q2_K);
  static const QuantDot q3_k = with_kernel<neon::Q23K<true>>(TensorType::Q3_K);
  static const QuantDot q4_k = with_kernel<neon::Q45K<false>>(TensorType::Q4_K);
  static const QuantDot q5_k = with_kernel<neon::Q45K<true>>(TensorType::Q5_K);
  static const QuantDot q6_k = with_kernel<neon::Q6K>(TensorType::Q6_K);
  static const QuantDot iq4_xs = with_kernel<neon::IQ4XS>(TensorType::IQ4_XS);
  switch (type) {
    case TensorType::Q2_K:
      return &q2_k;
    case TensorType::Q3_K:
      return &q3_k;
    case TensorType::Q4_K:
      return &q4_k;
    case TensorType::Q5_K:
      return &q5_k;
    case TensorType::Q6_K:
      return &q6_k;
    case TensorType::IQ4_XS:
      return &iq4_xs;
    default:
      return nullptr;
  }
}

}  // namespace ferrite::cpu
