// NEON paths (aarch64 Advanced SIMD with fp16 conversions) of the dot
// products, the f16 conversions, axpy_f16, softmax_exp, silu and rotate
// (the last three bit-identical to the reference); f32_to_bf16 is the
// reference's. Every sum is ordered as the x86 levels order it (vec_ops.h;
// the order of llama.cpp's AVX-512 build, in which the goldens of ../shared
// were made), so this level returns their bits: a 16-lane accumulator is four
// float32x4 registers (lane l of the 16 is lane l % 4 of register l / 4),
// each lane sees the same fused multiply-adds in the same order, and the lane
// reduction is _mm512_reduce_add_ps's (reduce16). tests/cpu/vec_order_test.cpp
// checks this against a scalar model of the order.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "cpu/fast_exp.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kQuad = 4;             // floats in one NEON register
constexpr int64_t kLanes = 4 * kQuad;    // one 16-lane accumulator
constexpr int64_t kStep = 4 * kLanes;    // four accumulators
constexpr int64_t kHalf16 = kLanes / 2;  // the 8 products the unrolled tail adds after whole 16s
constexpr int64_t kPairLanes = 2 * kLanes;  // bf16 values per dot-product step (16 pairs)
constexpr int kBf16Shift = 16;

// A 16-lane vector of floats.
struct V16 {
  float32x4_t q[4];
};

inline V16 zero16() { return {{vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}}; }

// _mm512_reduce_add_ps: upper 8 + lower 8, then upper 4 + lower 4, then
// (0 + 2) + (1 + 3).
inline float reduce16(const V16& v) {
  const float32x4_t t4 = vaddq_f32(vaddq_f32(v.q[3], v.q[1]), vaddq_f32(v.q[2], v.q[0]));
  const float32x2_t t2 = vadd_f32(vget_low_f32(t4), vget_high_f32(t4));
  return vget_lane_f32(t2, 0) + vget_lane_f32(t2, 1);
}

inline float32x4_t quad(const float* p) { return vld1q_f32(p); }
inline float32x4_t quad(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

inline float scalar(const float* p, int64_t i) { return p[i]; }
inline float scalar(const uint16_t* p, int64_t i) { return fp16_to_fp32(p[i]); }

// acc += a[i .. i+16) * b[i .. i+16), fused lane by lane.
template <typename T>
inline void fma16(V16& acc, const T* a, const T* b, int64_t i) {
  for (int j = 0; j < 4; ++j) acc.q[j] = vfmaq_f32(acc.q[j], quad(a + i + j * kQuad), quad(b + i + j * kQuad));
}

inline V16 add(const V16& x, const V16& y) {
  V16 r;
  for (int j = 0; j < 4; ++j) r.q[j] = vaddq_f32(x.q[j], y.q[j]);
  return r;
}

// Four accumulators over blocks of 64 (np a multiple of 64), combined
// (0+2)+(1+3), reduced.
template <typename T>
float dot_blocks64(const T* a, const T* b, int64_t np) {
  V16 acc[4] = {zero16(), zero16(), zero16(), zero16()};
  for (int64_t i = 0; i < np; i += kStep) {
    for (int j = 0; j < 4; ++j) fma16(acc[j], a, b, i + j * kLanes);
  }
  return reduce16(add(add(acc[0], acc[2]), add(acc[1], acc[3])));
}

// One accumulator in k order (n a multiple of 16), reduced.
template <typename T>
float dot_one16(const T* a, const T* b, int64_t n) {
  V16 acc = zero16();
  for (int64_t i = 0; i < n; i += kLanes) fma16(acc, a, b, i);
  return reduce16(acc);
}

// The tail after the blocks of 64 as llama.cpp's AVX-512 binary computes
// `sum += a[i] * b[i]`: rounded products added in order for whole 16s and
// then one 8, the last < 8 fused.
float dot_f32_unrolled(const float* a, const float* b, int64_t n) {
  const int64_t np = n - n % kStep;
  float sum = np > 0 ? dot_blocks64(a, b, np) : 0.0f;
  const int64_t rest = n - np;
  const int64_t added = np + rest / kLanes * kLanes + (rest % kLanes >= kHalf16 ? kHalf16 : 0);
  int64_t i = np;
  for (; i < added; ++i) sum += a[i] * b[i];
  for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
  return sum;
}

float dot_f32(const float* a, const float* b, int64_t n) {
  return n % kLanes == 0 ? dot_one16(a, b, n) : dot_f32_unrolled(a, b, n);
}

// The f16 tail: exact f32 products (of f16 values) added in order in double.
float dot_f16_unrolled(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t np = n - n % kStep;
  double sum = np > 0 ? dot_blocks64(a, b, np) : 0.0;
  for (int64_t i = np; i < n; ++i) sum += static_cast<double>(scalar(a, i) * scalar(b, i));
  return static_cast<float>(sum);
}

float dot_f16(const uint16_t* a, const uint16_t* b, int64_t n) {
  return n % kLanes == 0 ? dot_one16(a, b, n) : dot_f16_unrolled(a, b, n);
}

// bfloat16 [4] -> f32 [4] (exact).
inline float32x4_t widen_bf16(uint16x4_t x) { return vreinterpretq_f32_u32(vshll_n_u16(x, kBf16Shift)); }

// One step of vdpbf16ps as Intel specifies it: lane l (0..15) takes the pair
// (2l, 2l+1) of 32 values; the products are exact in f32, the odd one is
// added first, each addition rounded. vld2q_u16 splits 16 values into the
// even and odd ones of lanes 8h .. 8h+7.
inline void dp_bf16_step(V16& acc, const uint16_t* a, const uint16_t* b) {
  for (int h = 0; h < 2; ++h) {
    const uint16x8x2_t va = vld2q_u16(a + kLanes * h), vb = vld2q_u16(b + kLanes * h);
    const float32x4_t even[2][2] = {{widen_bf16(vget_low_u16(va.val[0])), widen_bf16(vget_high_u16(va.val[0]))},
                                    {widen_bf16(vget_low_u16(vb.val[0])), widen_bf16(vget_high_u16(vb.val[0]))}};
    const float32x4_t odd[2][2] = {{widen_bf16(vget_low_u16(va.val[1])), widen_bf16(vget_high_u16(va.val[1]))},
                                   {widen_bf16(vget_low_u16(vb.val[1])), widen_bf16(vget_high_u16(vb.val[1]))}};
    for (int q = 0; q < 2; ++q) {
      float32x4_t& lane = acc.q[2 * h + q];
      lane = vaddq_f32(vaddq_f32(lane, vmulq_f32(odd[0][q], odd[1][q])), vmulq_f32(even[0][q], even[1][q]));
    }
  }
}

// A bf16 row's last n - i < 32 values, zero-padded to one step.
struct Bf16Tail {
  uint16_t v[kPairLanes] = {};
  Bf16Tail(const uint16_t* p, int64_t left) { std::copy_n(p, left, v); }
};

float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  V16 acc = zero16();
  int64_t i = 0;
  for (; i + kPairLanes <= n; i += kPairLanes) dp_bf16_step(acc, a + i, b + i);
  if (i < n) dp_bf16_step(acc, Bf16Tail(a + i, n - i).v, Bf16Tail(b + i, n - i).v);
  return reduce16(acc);
}

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

// Whole groups of kExpGroup with exp4, each group's 16 values reduced as
// a 16-lane vector and added in double (the x86 order); the rest with
// libm, added one by one.
double softmax_exp(float* x, int64_t n, float max) {
  static_assert(kExpGroup == kLanes);
  const int64_t fast = n - n % kExpGroup;
  double sum = 0.0;
  const float32x4_t vmax = vdupq_n_f32(max);
  for (int64_t i = 0; i < fast; i += kLanes) {
    V16 v;
    for (int j = 0; j < 4; ++j) {
      v.q[j] = exp4(vsubq_f32(vld1q_f32(x + i + j * kQuad), vmax));
      vst1q_f32(x + i + j * kQuad, v.q[j]);
    }
    sum += static_cast<double>(reduce16(v));
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

// Register-blocked tiles: 2 rows x 2 tokens at a time, each output summed
// exactly as its dot (dot_one16 / dot_bf16), while every weight and
// activation vector loaded serves two products. Lengths that are not a
// multiple of 16 (f32/f16: the unrolled order) go through the dots.
template <int NR, int NT, typename T>
void tile_one16(const T* w, int64_t ws, const T* a, int64_t as, int64_t n, float* y, int64_t ys) {
  V16 acc[NR][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = zero16();
  }
  for (int64_t i = 0; i < n; i += kLanes) {
    for (int j = 0; j < 4; ++j) {
      float32x4_t wv[NR], av[NT];
      for (int r = 0; r < NR; ++r) wv[r] = quad(w + r * ws + i + j * kQuad);
      for (int t = 0; t < NT; ++t) av[t] = quad(a + t * as + i + j * kQuad);
      for (int r = 0; r < NR; ++r) {
        for (int t = 0; t < NT; ++t) acc[r][t].q[j] = vfmaq_f32(acc[r][t].q[j], wv[r], av[t]);
      }
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = reduce16(acc[r][t]);
  }
}

template <int NR, int NT>
void tile_bf16_pairs(const uint16_t* w, int64_t ws, const uint16_t* a, int64_t as, int64_t n, float* y, int64_t ys) {
  V16 acc[NR][NT];
  for (auto& row : acc) {
    for (auto& v : row) v = zero16();
  }
  int64_t i = 0;
  for (; i + kPairLanes <= n; i += kPairLanes) {
    for (int r = 0; r < NR; ++r) {
      for (int t = 0; t < NT; ++t) dp_bf16_step(acc[r][t], w + r * ws + i, a + t * as + i);
    }
  }
  if (i < n) {
    for (int r = 0; r < NR; ++r) {
      const Bf16Tail wt(w + r * ws + i, n - i);
      for (int t = 0; t < NT; ++t) dp_bf16_step(acc[r][t], wt.v, Bf16Tail(a + t * as + i, n - i).v);
    }
  }
  for (int t = 0; t < NT; ++t) {
    for (int r = 0; r < NR; ++r) y[t * ys + r] = reduce16(acc[r][t]);
  }
}

// Covers an nr x nt tile (each <= 4) with 2 x 2 kernels (and their 1-wide
// edges): Kernel<NR, NT>::run(w, a, y) for each piece.
template <template <int, int> typename Kernel, typename T>
void tile_pairs(const T* w, int64_t ws, int64_t nr, const T* a, int64_t as, int64_t nt, int64_t n, float* y,
                int64_t ys) {
  for (int64_t r = 0; r < nr; r += 2) {
    for (int64_t t = 0; t < nt; t += 2) {
      const T* wr = w + r * ws;
      const T* at = a + t * as;
      float* yo = y + t * ys + r;
      const bool two_rows = r + 1 < nr, two_tokens = t + 1 < nt;
      if (two_rows && two_tokens) {
        Kernel<2, 2>::run(wr, ws, at, as, n, yo, ys);
      } else if (two_rows) {
        Kernel<2, 1>::run(wr, ws, at, as, n, yo, ys);
      } else if (two_tokens) {
        Kernel<1, 2>::run(wr, ws, at, as, n, yo, ys);
      } else {
        Kernel<1, 1>::run(wr, ws, at, as, n, yo, ys);
      }
    }
  }
}

template <int NR, int NT>
struct F32Tile {
  static void run(const float* w, int64_t ws, const float* a, int64_t as, int64_t n, float* y, int64_t ys) {
    tile_one16<NR, NT>(w, ws, a, as, n, y, ys);
  }
};
template <int NR, int NT>
struct F16Tile {
  static void run(const uint16_t* w, int64_t ws, const uint16_t* a, int64_t as, int64_t n, float* y, int64_t ys) {
    tile_one16<NR, NT>(w, ws, a, as, n, y, ys);
  }
};
template <int NR, int NT>
struct Bf16Tile {
  static void run(const uint16_t* w, int64_t ws, const uint16_t* a, int64_t as, int64_t n, float* y, int64_t ys) {
    tile_bf16_pairs<NR, NT>(w, ws, a, as, n, y, ys);
  }
};

void tile_f32(const float* w, int64_t ws, int64_t nr, const float* a, int64_t as, int64_t nt, int64_t n, float* y,
              int64_t ys) {
  if (n % kLanes != 0) return tile_by_dots(dot_f32, w, ws, nr, a, as, nt, n, y, ys);
  tile_pairs<F32Tile>(w, ws, nr, a, as, nt, n, y, ys);
}
void tile_f16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
              float* y, int64_t ys) {
  if (n % kLanes != 0) return tile_by_dots(dot_f16, w, ws, nr, a, as, nt, n, y, ys);
  tile_pairs<F16Tile>(w, ws, nr, a, as, nt, n, y, ys);
}
void tile_bf16(const uint16_t* w, int64_t ws, int64_t nr, const uint16_t* a, int64_t as, int64_t nt, int64_t n,
               float* y, int64_t ys) {
  tile_pairs<Bf16Tile>(w, ws, nr, a, as, nt, n, y, ys);
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
