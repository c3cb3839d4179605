#include "cpu/dot/act_quant.h"

#include <cmath>

#include "core/fp16.h"

namespace ferrite::cpu {
namespace {

constexpr int64_t kBlock = 32;
constexpr int64_t kBlockK = 256;
constexpr float kQ8Max = 127.0f;

// Round to nearest, ties to even (the SIMD rounding mode llama.cpp uses).
inline float round_even(float v) { return std::nearbyint(v); }

void round_trip_q8_0(const float* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n; b += kBlock) {
    float amax = 0.0f;
    for (int64_t j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(x[b + j]));
    const float d = amax / kQ8Max;
    const float id = amax != 0.0f ? kQ8Max / amax : 0.0f;
    const float d16 = fp16_to_fp32(fp32_to_fp16(d));
    for (int64_t j = 0; j < kBlock; ++j) y[b + j] = round_even(x[b + j] * id) * d16;
  }
}

void round_trip_q8_k(const float* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n; b += kBlockK) {
    float amax = 0.0f, vmax = 0.0f;
    for (int64_t j = 0; j < kBlockK; ++j) {
      const float a = std::fabs(x[b + j]);
      if (a > amax) {
        amax = a;
        vmax = x[b + j];
      }
    }
    if (amax == 0.0f) {
      for (int64_t j = 0; j < kBlockK; ++j) y[b + j] = 0.0f;
      continue;
    }
    const float iscale = -kQ8Max / vmax;
    const float d = 1.0f / iscale;
    for (int64_t j = 0; j < kBlockK; ++j) {
      y[b + j] = std::fmin(kQ8Max, round_even(iscale * x[b + j])) * d;
    }
  }
}

}  // namespace

ActQuant act_quant_for(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::BF16:
      return ActQuant::None;
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::IQ4_NL:
    case TensorType::MXFP4:
      return ActQuant::Q8_0;
    case TensorType::Q4_1:
    case TensorType::Q5_1:
      return ActQuant::Q8_1;
    default:
      return ActQuant::Q8_K;
  }
}

int64_t act_quant_block(ActQuant q) { return q == ActQuant::Q8_K ? kBlockK : kBlock; }

void act_quant_round_trip(ActQuant q, const float* x, float* y, int64_t n) {
  switch (q) {
    case ActQuant::None:
      for (int64_t i = 0; i < n; ++i) y[i] = x[i];
      break;
    case ActQuant::Q8_0:
    case ActQuant::Q8_1:  // same values; Q8_1 adds the block sum, which the f32 product needs not
      round_trip_q8_0(x, y, n);
      break;
    case ActQuant::Q8_K:
      round_trip_q8_k(x, y, n);
      break;
  }
}

void act_quant_q8_1_sum_correction(const float* x, const float* y, float* corr, int64_t n) {
  for (int64_t b = 0; b < n; b += kBlock) {
    float amax = 0.0f;
    for (int64_t j = 0; j < kBlock; ++j) amax = std::fmax(amax, std::fabs(x[b + j]));
    const float d = amax / kQ8Max;
    const float d16 = fp16_to_fp32(fp32_to_fp16(d));
    float sum_y = 0.0f;
    int32_t sum_q = 0;
    for (int64_t j = 0; j < kBlock; ++j) {
      sum_y += y[b + j];
      sum_q += d16 != 0.0f ? static_cast<int32_t>(y[b + j] / d16) : 0;
    }
    corr[b / kBlock] = fp16_to_fp32(fp32_to_fp16(d * static_cast<float>(sum_q))) - sum_y;
  }
}

}  // namespace ferrite::cpu
