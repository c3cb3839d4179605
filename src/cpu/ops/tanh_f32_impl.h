// tanh in float as glibc's tanhf computes it (through its expm1f): the
// classic fdlibm algorithm, reproduced bit for bit so that the CPU and the
// GPU round soft-capped scores and logits alike, and alike on every host:
// a libm with another tanhf (glibc 2.41's correctly rounded one, CUDA's
// tanhf: up to 2 ulp apart) moves a few results by one ulp, and through the
// f16 roundings of the KV cache and the attention probabilities a float
// model's logits by up to 3e-3 (gemma2's soft-capping, measured on the H200).
// llama.cpp's softcap calls tanhf; the goldens came from x86-64 glibc 2.36,
// whose tanhf this equals on every float (tests/cpu/tanh_f32_test.cpp).
// arm64's glibc 2.36 compiles the same algorithm with fused multiply-adds
// and differs in the last bit on about 1 float in 28,000; ferrite computes
// as on x86 everywhere.
//
// Templated on the arithmetic (Ops: mul, add, sub, div rounding each result,
// never fused; bits / from: the float's bit pattern) so that one definition
// serves the host (tanh_f32.cpp, compiled without contraction) and the GPU
// (cuda/kernels/device_math.cuh, with __fmul_rn and friends).
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define FERRITE_TANH_HD __device__ __forceinline__
#else
#define FERRITE_TANH_HD inline
#endif

namespace ferrite::cpu::tanh_detail {

// expm1(x) for the arguments tanh passes (|x| < 44, or -2 < x < 0), and the
// rest of the float line.
template <class Ops>
FERRITE_TANH_HD float expm1_f32(float x) {
  const uint32_t sign = Ops::bits(x) & 0x80000000u;
  const uint32_t mag = Ops::bits(x) & 0x7fffffffu;
  const float one = 1.0f;
  if (mag >= 0x4195b844u) {    // |x| >= 27 ln 2
    if (mag >= 0x42b17218u) {  // |x| >= 88.72
      if (mag > 0x7f800000u) return Ops::add(x, x);
      if (mag == 0x7f800000u) return sign == 0 ? x : -1.0f;
      if (x > Ops::from(0x42b17180u)) return Ops::from(0x7f800000u);  // overflow
    }
    if (sign != 0) return -1.0f;
  }
  const float ln2_hi = Ops::from(0x3f317180u), ln2_lo = Ops::from(0x3717f7d1u);
  int32_t k = 0;
  float c = 0.0f;
  if (mag > 0x3eb17218u) {  // |x| > ln 2 / 2: x = k ln 2 + (hi - lo)
    float hi, lo;
    if (mag < 0x3f851592u) {  // |x| < 1.5 ln 2
      k = sign == 0 ? 1 : -1;
      hi = sign == 0 ? Ops::sub(x, ln2_hi) : Ops::add(x, ln2_hi);
      lo = sign == 0 ? ln2_lo : -ln2_lo;
    } else {
      k = static_cast<int32_t>(Ops::add(Ops::mul(Ops::from(0x3fb8aa3bu), x), sign == 0 ? 0.5f : -0.5f));
      const float kf = static_cast<float>(k);
      hi = Ops::sub(x, Ops::mul(kf, ln2_hi));
      lo = Ops::mul(kf, ln2_lo);
    }
    x = Ops::sub(hi, lo);
    c = Ops::sub(Ops::sub(hi, x), lo);
  } else if (mag < 0x33000000u) {  // |x| < 2^-25
    return x;
  }
  // The reduced argument: a rational approximation of expm1 on [-ln2/2, ln2/2].
  const float q1 = Ops::from(0xbd088889u), q2 = Ops::from(0x3ad00d01u), q3 = Ops::from(0xb8a670cdu),
              q4 = Ops::from(0x36867e54u), q5 = Ops::from(0xb457edbbu);
  const float hfx = Ops::mul(0.5f, x);
  const float hxs = Ops::mul(x, hfx);
  const float poly = Ops::add(q4, Ops::mul(hxs, q5));
  const float r1 = Ops::add(
      one, Ops::mul(hxs, Ops::add(q1, Ops::mul(hxs, Ops::add(q2, Ops::mul(hxs, Ops::add(q3, Ops::mul(hxs, poly))))))));
  float t = Ops::sub(3.0f, Ops::mul(r1, hfx));
  float e = Ops::mul(hxs, Ops::div(Ops::sub(r1, t), Ops::sub(6.0f, Ops::mul(x, t))));
  if (k == 0) return Ops::sub(x, Ops::sub(Ops::mul(x, e), hxs));
  e = Ops::sub(Ops::mul(x, Ops::sub(e, c)), c);
  e = Ops::sub(e, hxs);
  if (k == -1) return Ops::sub(Ops::mul(0.5f, Ops::sub(x, e)), 0.5f);
  if (k == 1) {
    if (x < -0.25f) return Ops::mul(-2.0f, Ops::sub(e, Ops::add(x, 0.5f)));
    return Ops::add(one, Ops::mul(2.0f, Ops::sub(x, e)));
  }
  const uint32_t exp_k = static_cast<uint32_t>(k) << 23;  // k added to the exponent
  if (k <= -2 || k > 56) {
    const float y = Ops::sub(one, Ops::sub(e, x));
    return Ops::sub(Ops::from(Ops::bits(y) + exp_k), one);
  }
  float y;
  if (k < 23) {
    t = Ops::from(0x3f800000u - (0x1000000u >> k));  // 1 - 2^-k
    y = Ops::sub(t, Ops::sub(e, x));
  } else {
    t = Ops::from(static_cast<uint32_t>(0x7f - k) << 23);  // 2^-k
    y = Ops::add(Ops::sub(x, Ops::add(e, t)), one);
  }
  return Ops::from(Ops::bits(y) + exp_k);
}

template <class Ops>
FERRITE_TANH_HD float tanh_f32(float x) {
  const uint32_t sign = Ops::bits(x) & 0x80000000u;
  const uint32_t mag = Ops::bits(x) & 0x7fffffffu;
  if (mag >= 0x7f800000u) {  // inf: +-1; NaN: NaN
    const float r = Ops::div(1.0f, x);
    return sign == 0 ? Ops::add(r, 1.0f) : Ops::sub(r, 1.0f);
  }
  float z;
  if (mag < 0x41b00000u) {  // |x| < 22
    if (mag == 0) return x;
    if (mag < 0x24000000u) return Ops::mul(x, Ops::add(1.0f, x));  // |x| < 2^-55
    const float ax = Ops::from(mag);
    if (mag >= 0x3f800000u) {  // |x| >= 1
      const float t = expm1_f32<Ops>(Ops::mul(2.0f, ax));
      z = Ops::sub(1.0f, Ops::div(2.0f, Ops::add(t, 2.0f)));
    } else {
      const float t = expm1_f32<Ops>(Ops::mul(-2.0f, ax));
      z = Ops::div(-t, Ops::add(t, 2.0f));
    }
  } else {
    z = 1.0f;
  }
  return sign == 0 ? z : -z;
}

}  // namespace ferrite::cpu::tanh_detail
