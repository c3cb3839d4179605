#include "cpu/ops/gelu_f16.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <memory>

#include "core/fp16.h"
#include "cpu/features.h"
#include "cpu/ops/tanh_f32.h"

namespace ferrite::cpu {
namespace {

// Beyond these bounds the table is bypassed (GELU is 0 or x to f32 precision).
constexpr float kLowCut = -10.0f;
constexpr float kHighCut = 10.0f;
constexpr size_t kTableSize = size_t{1} << 16;
constexpr size_t kTablePadding = 1;  // for 32-bit gathers (gelu_f16.h)

constexpr float kSqrt2OverPi = 0.79788456080286535588f;
constexpr float kGeluCoef = 0.044715f;

// The tanh approximation in f32 with 1 + c x^2 as one fused multiply-add:
// llama.cpp's table is built by code that compilers contract this way
// (x86-64 builds with FMA), and the last bit decides some f16 roundings.
float gelu_fma(float x) {
  return 0.5f * x * (1.0f + tanh_f32(kSqrt2OverPi * x * std::fma(kGeluCoef * x, x, 1.0f)));
}

// f16 bits -> f16 bits of gelu, built once (128 KiB).
const std::array<uint16_t, kTableSize + kTablePadding>& table() {
  static const std::unique_ptr<std::array<uint16_t, kTableSize + kTablePadding>> t = [] {
    auto a = std::make_unique<std::array<uint16_t, kTableSize + kTablePadding>>();
    a->back() = 0;
    for (size_t i = 0; i < kTableSize; ++i) {
      (*a)[i] = fp32_to_fp16(gelu_fma(fp16_to_fp32(static_cast<uint16_t>(i))));
    }
    return a;
  }();
  return *t;
}

}  // namespace

float gelu_f16(float x) {
  if (x <= kLowCut) return 0.0f;
  if (x >= kHighCut) return x;
  return fp16_to_fp32(table()[fp32_to_fp16(x)]);
}

const uint16_t* gelu_f16_table() { return table().data(); }

void gelu_f16_inplace(float* x, int64_t n) {
  if (active_isa() >= Isa::Avx512) return geglu_f16_avx512(gelu_f16_table(), x, nullptr, n, x);
  if (active_isa() == Isa::Avx2) return geglu_f16_avx2(gelu_f16_table(), x, nullptr, n, x);
  for (int64_t i = 0; i < n; ++i) x[i] = gelu_f16(x[i]);
}

void geglu_f16(const float* gate, const float* up, int64_t n, float* y) {
  if (active_isa() >= Isa::Avx512) return geglu_f16_avx512(gelu_f16_table(), gate, up, n, y);
  if (active_isa() == Isa::Avx2) return geglu_f16_avx2(gelu_f16_table(), gate, up, n, y);
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_f16(gate[i]) * up[i];
}

}  // namespace ferrite::cpu
