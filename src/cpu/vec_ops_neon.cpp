// NEON paths (aarch64 Advanced SIMD with fp16 conversions) of the dot
// products, the f16 conversions, axpy_f16, softmax_exp, silu and rotate
// (the last three bit-identical to the reference); f32_to_bf16 is the
// reference's. A "16-lane accumulator" of vec_ops.h is four float32x4
// registers here (lane l of the 16 is lane l % 4 of register l / 4), so the
// summation orders are the ones vec_ops.h documents: one accumulator for
// lengths that are a multiple of 16, else four over blocks of 64 combined as
// (0+2)+(1+3), then a scalar tail. Lane reductions add the four registers
// pairwise, (0+1)+(2+3), then across the lanes.
#include <arm_neon.h>

#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kQuad = 4;             // floats in one NEON register
constexpr int64_t kLanes = 4 * kQuad;    // one 16-lane accumulator
constexpr int64_t kStep = 4 * kLanes;    // four accumulators
constexpr int kBf16Shift = 16;

// A 16-lane vector of floats.
struct V16 {
  float32x4_t q[4];
};

inline V16 zero16() { return {{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}}; }

inline float32x4_t quad(const float* p) { return vld1q_f32(p); }
inline float32x4_t quad(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

struct Bf16 {
  const uint16_t* p;
};
inline float32x4_t quad(Bf16 x) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(x.p), kBf16Shift)); }

inline float scalar(const float* p, int64_t i) { return p[i]; }
inline float scalar(const uint16_t* p, int64_t i) { return fp16_to_fp32(p[i]); }
inline float scalar(Bf16 x, int64_t i) { return bf16_to_fp32(x.p[i]); }

inline const float* at(const float* p, int64_t i) { return p + i; }
inline const uint16_t* at(const uint16_t* p, int64_t i) { return p + i; }
inline Bf16 at(Bf16 x, int64_t i) { return {x.p + i}; }

// acc += a[i .. i+16) * b[i .. i+16) (fused, as the x86 levels are).
template <typename P>
inline void fma16(V16& acc, P a, P b, int64_t i) {
  for (int j = 0; j < 4; ++j) acc.q[j] = vfmaq_f32(acc.q[j], quad(at(a, i + j * kQuad)), quad(at(b, i + j * kQuad)));
}

inline float32x4_t add16(const V16& x) { return vaddq_f32(vaddq_f32(x.q[0], x.q[1]), vaddq_f32(x.q[2], x.q[3])); }

inline V16 add(const V16& x, const V16& y) {
  V16 r;
  for (int j = 0; j < 4; ++j) r.q[j] = vaddq_f32(x.q[j], y.q[j]);
  return r;
}

// Four accumulators over blocks of 64, (0+2)+(1+3), then the scalar tail
// (summed in Tail: float for f32/bf16, double for f16).
template <typename Tail, typename P>
float dot_unrolled(P a, P b, int64_t n) {
  V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
  const int64_t np = n - n % kStep;
  for (int64_t i = 0; i < np; i += kStep) {
    for (int j = 0; j < 4; ++j) fma16(acc[j], a, b, i + j * kLanes);
  }
  Tail sum = np > 0 ? vaddvq_f32(add16(add(add(acc[0], acc[2]), add(acc[1], acc[3])))) : 0.0f;
  for (int64_t i = np; i < n; ++i) sum += static_cast<Tail>(scalar(a, i) * scalar(b, i));
  return static_cast<float>(sum);
}

template <typename Tail, typename P>
float dot(P a, P b, int64_t n) {
  if (n % kLanes != 0) return dot_unrolled<Tail>(a, b, n);
  V16 acc = zero16();
  for (int64_t i = 0; i < n; i += kLanes) fma16(acc, a, b, i);
  return vaddvq_f32(add16(acc));
}

float dot_f32(const float* a, const float* b, int64_t n) { return dot<float>(a, b, n); }
float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) { return dot<double>(a, b, n); }
float dot_f32_unrolled(const float* a, const float* b, int64_t n) { return dot_unrolled<float>(a, b, n); }
float dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) { return dot_unrolled<double>(a, b, n); }
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) { return dot<float>(Bf16{a}, Bf16{b}, n); }

// FCVTN rounds to nearest even (the default FPCR mode), with IEEE overflow
// to infinity and subnormal results, as fp32_to_fp16 does.
void f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + kQuad <= n; i += kQuad) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + kQuad <= n; i += kQuad) vst1q_f32(y + i, quad(x + i));
  for (; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void axpy_f16(float a, const uint16_t* x, float* y, int64_t n) {
  const float32x4_t va = vdupq_n_f32(a);
  int64_t i = 0;
  for (; i + kQuad <= n; i += kQuad) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, quad(x + i)));
  for (; i < n; ++i) y[i] += a * fp16_to_fp32(x[i]);
}

// fast_exp::exp_ref lane-wise, every step the same fused or plain operation
// (negating a multiplicand is exact, so x - n*c fused is fma(-n, c, x)).
// Lanes with |n| > 126 (2^n not a normal float: results near 0 or inf) and
// NaN are taken from the scalar definition.
inline float32x4_t exp4(float32x4_t x) {
  using namespace fast_exp;
  constexpr float kMaxNormalExponent = 126.0f;
  constexpr uint32_t kExponentBias = 127;
  constexpr int kMantissaBits = 23;
  const float32x4_t shift = vdupq_n_f32(kShift);
  const float32x4_t n = vsubq_f32(vfmaq_f32(shift, x, vdupq_n_f32(kLog2e)), shift);
  const float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(kLn2Hi)), n, vdupq_n_f32(kLn2Lo));
  const float32x4_t u = vmulq_f32(b, b);
  const float32x4_t p54 = vfmaq_f32(vdupq_n_f32(kP4), vdupq_n_f32(kP5), b);
  const float32x4_t p32 = vfmaq_f32(vdupq_n_f32(kP2), vdupq_n_f32(kP3), b);
  const float32x4_t p10 = vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(kP1), b);
  const float32x4_t j = vfmaq_f32(p10, vfmaq_f32(p32, p54, u), u);
  // 2^n by building the exponent (n is an integer-valued float here). In
  // unsigned arithmetic: GCC's vaddq_s32 is a C++ addition, and the lanes
  // replaced below (n = +-inf, NaN) would overflow it.
  const uint32x4_t biased = vaddq_u32(vreinterpretq_u32_s32(vcvtnq_s32_f32(n)), vdupq_n_u32(kExponentBias));
  float32x4_t r = vmulq_f32(j, vreinterpretq_f32_u32(vshlq_n_u32(biased, kMantissaBits)));
  const uint32x4_t ok = vcleq_f32(vabsq_f32(n), vdupq_n_f32(kMaxNormalExponent));  // false for NaN
  if (vminvq_u32(ok) == 0) {
    float xs[kQuad], rs[kQuad];
    uint32_t oks[kQuad];
    vst1q_f32(xs, x);
    vst1q_f32(rs, r);
    vst1q_u32(oks, ok);
    for (int64_t l = 0; l < kQuad; ++l) {
      if (oks[l] == 0) rs[l] = exp_ref(xs[l]);
    }
    r = vld1q_f32(rs);
  }
  return r;
}

// Whole groups of kExpGroup with exp4, the rest with libm, summed in order
// in double as the reference sums.
double softmax_exp(float* x, int64_t n, float max) {
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  const float32x4_t vmax = vdupq_n_f32(max);
  for (int64_t i = 0; i < fast; i += kQuad) {
    const float32x4_t v = exp4(vsubq_f32(vld1q_f32(x + i), vmax));
    vst1q_f32(x + i, v);
    for (int64_t l = 0; l < kQuad; ++l) sum += x[i + l];
  }
  for (int64_t i = fast; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

void silu(const float* x, float* y, int64_t n) {
  const int64_t fast = n - n % kExpGroup;
  for (int64_t i = 0; i < fast; i += kQuad) {
    const float32x4_t v = vld1q_f32(x + i);
    vst1q_f32(y + i, vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(v)))));
  }
  for (int64_t i = fast; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

// Contiguous pairs (stride 1) four at a time; the same fused operations as
// the reference's std::fma.
void rotate(float* a, float* b, const float* c, const float* s, int64_t n, int64_t stride) {
  int64_t i = 0;
  if (stride == 1) {
    for (; i + kQuad <= n; i += kQuad) {
      const float32x4_t x0 = vld1q_f32(a + i), x1 = vld1q_f32(b + i);
      const float32x4_t vc = vld1q_f32(c + i), vs = vld1q_f32(s + i);
      vst1q_f32(a + i, vfmaq_f32(vnegq_f32(vmulq_f32(x1, vs)), x0, vc));
      vst1q_f32(b + i, vfmaq_f32(vmulq_f32(x1, vc), x0, vs));
    }
  }
  for (; i < n; ++i) {
    const float x0 = a[i * stride], x1 = b[i * stride];
    a[i * stride] = std::fma(x0, c[i], -(x1 * s[i]));
    b[i * stride] = std::fma(x0, s[i], x1 * c[i]);
  }
}

void tile_f32(const float* w, int64_t ws, int64_t nr, const float* a, int64_t as, int64_t nt, int64_t n, float* y,
              int64_t ys) {
  tile_by_dots(dot_f32, w, ws, nr, a, as, nt, n, y, ys);
}
void tile_f16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
              float* y, int64_t ys) {
  tile_by_dots(dot_f16, w, ws, nr, a, as, nt, n, y, ys);
}
void tile_bf16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
               float* y, int64_t ys) {
  tile_by_dots(dot_bf16, w, ws, nr, a, as, nt, n, y, ys);
}

VecOps make_ops() {
  VecOps ops = vec_ops_ref();  // f32_to_bf16: the reference's
  ops.dot_f32 = dot_f32;
  ops.dot_f16 = dot_f16;
  ops.dot_f32_unrolled = dot_f32_unrolled;
  ops.dot_f16_unrolled = dot_f16_unrolled;
  ops.dot_bf16 = dot_bf16;
  ops.f32_to_f16 = f32_to_f16;
  ops.f16_to_f32 = f16_to_f32;
  ops.axpy_f16 = axpy_f16;
  ops.softmax_exp = softmax_exp;
  ops.silu = silu;
  ops.rotate = rotate;
  ops.tile_f32 = tile_f32;
  ops.tile_f16 = tile_f16;
  ops.tile_bf16 = tile_bf16;
  return ops;
}

}  // namespace

const VecOps& vec_ops_neon() {
  static const VecOps ops = make_ops();
  return ops;
}

}  // namespace ferrite::cpu
