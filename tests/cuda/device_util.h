// Helpers of the CUDA tests: device copies of host vectors, and skipping
// (locally) or failing (CI) when no GPU is present.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/device_buffer.h"
#include "core/fp16.h"
#include "cuda/backend/linear.h"
#include "quant/type_traits.h"
#include "support/test_data.h"

namespace ferrite::cuda::test {

template <typename T>
DeviceBuffer to_device(const std::vector<T>& v) {
  DeviceBuffer b(v.size() * sizeof(T));
  FERRITE_CUDA_CHECK(cudaMemcpy(b.as(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return b;
}

template <typename T>
std::vector<T> to_host(const DeviceBuffer& b, size_t n) {
  std::vector<T> v(n);
  FERRITE_CUDA_CHECK(cudaDeviceSynchronize());
  FERRITE_CUDA_CHECK(cudaMemcpy(v.data(), b.as(), n * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

// A device buffer of n floats poisoned with NaN (unwritten outputs show).
inline DeviceBuffer poisoned(size_t n) {
  DeviceBuffer b(n * sizeof(float));
  FERRITE_CUDA_CHECK(cudaMemset(b.as(), 0xFF, n * sizeof(float)));
  return b;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n rows of k values w [n, k] as GGUF bytes of type t: F32 as they are, F16
// rounded, the quantized types through the CPU's quantizer.
inline std::vector<uint8_t> quantize_rows(TensorType t, const std::vector<float>& w, int64_t n, int64_t k) {
  const uint64_t rb = tensor_row_bytes(t, static_cast<uint64_t>(k));
  std::vector<uint8_t> bytes(rb * static_cast<uint64_t>(n));
  if (t == TensorType::F32) {
    std::memcpy(bytes.data(), w.data(), bytes.size());
  } else if (t == TensorType::F16) {
    auto* h = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < static_cast<size_t>(n * k); ++i) h[i] = fp32_to_fp16(w[i]);
  } else {
    const quant::TypeTraits& tr = quant::type_traits(t);
    for (int64_t r = 0; r < n; ++r) tr.from_float(w.data() + r * k, bytes.data() + r * rb, k, nullptr);
  }
  return bytes;
}

// Largest |gpu - ref| over the largest |ref| (infinity where gpu holds a NaN).
inline double relative_error(const std::vector<float>& gpu, const std::vector<float>& ref) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(gpu[i])) return INFINITY;
    err = std::max(err, static_cast<double>(std::fabs(gpu[i] - ref[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(ref[i])));
  }
  return err / scale;
}

// Fresh inputs each run; the seed is printed so that a failure reproduces.
inline std::mt19937 fresh_rng() {
  const uint32_t seed = std::random_device{}();
  std::printf("  seed %u\n", seed);
  return std::mt19937(seed);
}

// Sets the products' arithmetic (cuda/linear.h set_exact_products) for a
// scope and restores the previous setting.
class ProductMode {
 public:
  explicit ProductMode(bool exact) : saved_(exact_products()) { set_exact_products(exact); }
  ~ProductMode() { set_exact_products(saved_); }
  ProductMode(const ProductMode&) = delete;
  ProductMode& operator=(const ProductMode&) = delete;

 private:
  bool saved_;
};

}  // namespace ferrite::cuda::test

// Skips the test without a GPU (the CUDA tests run on the device machine).
#define FERRITE_REQUIRE_GPU()                                        \
  do {                                                               \
    if (::ferrite::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)
