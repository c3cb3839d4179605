// Reference of the packed float products: read off the layout one pair at a
// time, products in f32 (exact for bf16 x bf16 pairs), sums in f32 in column order.
#include "cpu/packed/packed_float.h"

#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_matmul.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kLaneBytes = 4;

template <TensorType kType>
void packed_float_ref(const uint8_t* group, const PackedFloatActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < nt; ++t) {
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t j = 0; j < a.k / 2; ++j) {
        uint16_t w[2];
        std::memcpy(w, group + (j * kPackRows + r) * kLaneBytes, sizeof(w));
        for (int e = 0; e < 2; ++e) {
          const int64_t i = (t0 + t) * a.k + 2 * j + e;
          if constexpr (kType == TensorType::BF16) {
            acc += bf16_to_fp32(w[e]) * bf16_to_fp32(static_cast<const uint16_t*>(a.data)[i]);
          } else {
            acc += fp16_to_fp32(w[e]) * static_cast<const float*>(a.data)[i];
          }
        }
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace

PackedFloatKernel packed_float_kernel_ref(TensorType type) {
  switch (type) {
    case TensorType::BF16:
      return packed_float_ref<TensorType::BF16>;
    case TensorType::F16:
      return packed_float_ref<TensorType::F16>;
    default:
      return nullptr;
  }
}

PackedFloatKernel find_packed_float_kernel(TensorType type) {
  if (active_isa() >= Isa::Avx512) return packed_float_kernel_avx512(type);
  return active_isa() >= Isa::Avx2 ? packed_float_kernel_avx2(type) : nullptr;  // Neon sorts below Avx2
}

int64_t packed_float_call_tokens() {
  return active_isa() >= Isa::Avx512 ? kPackTokens : kPackFloatTokens;
}

PackedFloatKernel find_packed_float_pair_kernel(TensorType type) {
  return active_isa() >= Isa::Avx512 ? packed_float_pair_kernel_avx512(type) : nullptr;
}

PackedFloatKernel find_packed_float_kernel_amx(TensorType type) {
  return active_isa() >= Isa::Avx512 && amx_available() ? packed_float_kernel_amx_impl(type) : nullptr;
}

}  // namespace ferrite::cpu
