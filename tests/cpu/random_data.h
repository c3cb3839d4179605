// Random inputs for kernel tests (fixed seeds, so failures reproduce).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/fp16.h"

namespace ferrite::cpu::test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint16_t> to_f16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = fp32_to_fp16(v[i]);
  return out;
}

inline std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = fp32_to_bf16(v[i]);
  return out;
}

}  // namespace ferrite::cpu::test
