// exp(x) in single precision as llama.cpp's vectorised softmax and SiLU
// compute it on AVX-512 machines (a polynomial after range reduction, from
// Arm's optimized-routines expf): x = n ln2 + b with n = round(x log2 e),
// exp(b) by a degree-5 polynomial evaluated with fused multiply-adds, scaled
// by 2^n. Max error ~1.5 ulp. Using the same function (not libm's expf)
// keeps our softmax probabilities bit-identical to llama.cpp's, which
// matters because they are rounded to f16 next.
//
// The vector kernels (VecOps::exp_*) evaluate the same formula lane-wise, so
// every instruction-set level returns exactly these values.
#pragma once

#include <cmath>

namespace ferrite::cpu::fast_exp {

constexpr float kShift = 0x1.8p23f;       // rounds to an integer when added
constexpr float kLog2e = 0x1.715476p+0f;
constexpr float kLn2Hi = 0x1.62e4p-1f;
constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
constexpr float kP1 = 0x1.ffffecp-1f;
constexpr float kP2 = 0x1.fffdb6p-2f;
constexpr float kP3 = 0x1.555e66p-3f;
constexpr float kP4 = 0x1.573e2ep-5f;
constexpr float kP5 = 0x1.0e4020p-7f;
// Beyond |n| = this the result is 0 or infinity (x < -103.97 or x > 88.38
// are already out of float range).
constexpr float kMaxExponent = 192.0f;

inline float exp_ref(float x) {
  if (std::isnan(x)) return x;
  const float z = std::fma(x, kLog2e, kShift);
  const float n = z - kShift;
  if (std::fabs(n) > kMaxExponent) return n > 0 ? INFINITY : 0.0f;
  const float b = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(kP5, b, kP4), u, std::fma(kP3, b, kP2)), u, std::fma(kP1, b, 1.0f));
  return std::ldexp(j, static_cast<int>(n));
}

}  // namespace ferrite::cpu::fast_exp
