#include "quant/dequantize.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "quant/type_traits.h"

namespace ferrite::quant {
namespace {

const TypeTraits& checked(TensorType type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  if (n < 0 || n % t.block_size != 0) {
    throw InvalidArgument("row of " + std::to_string(n) + " elements is not a whole number of " + t.name +
                          " blocks of " + std::to_string(t.block_size));
  }
  return t;
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  checked(type, n).to_float(src, dst, n);
}

void dequantize_row_ref(TensorType type, const void* src, float* dst, int64_t n) {
  checked(type, n).to_float_ref(src, dst, n);
}

void dequantize_row_f16(TensorType type, const void* src, uint16_t* dst, int64_t n) {
  const TypeTraits& t = checked(type, n);
  constexpr int64_t kChunk = 4096;  // multiple of every block size
  std::vector<float> tmp(static_cast<size_t>(n < kChunk ? n : kChunk));
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t done = 0; done < n; done += kChunk) {
    const int64_t m = n - done < kChunk ? n - done : kChunk;
    t.to_float(p + static_cast<uint64_t>(done / t.block_size) * t.block_bytes, tmp.data(), m);
    for (int64_t i = 0; i < m; ++i) dst[done + i] = fp32_to_fp16(tmp[static_cast<size_t>(i)]);
  }
}

uint64_t quantize_rows(TensorType type, const float* src, void* dst, int64_t n_rows, int64_t n_per_row,
                       const float* importance) {
  const TypeTraits& t = checked(type, n_per_row);
  if (t.from_float == nullptr) {
    throw InvalidArgument(std::string("quantizing to ") + t.name + " is not supported");
  }
  if (t.needs_imatrix && importance == nullptr) {
    throw InvalidArgument(std::string("quantizing to ") + t.name +
                          " needs an importance matrix (--imatrix FILE): without one the weights are unusable");
  }
  const uint64_t row_bytes = static_cast<uint64_t>(n_per_row / t.block_size) * t.block_bytes;
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < n_rows; ++r) {
    t.from_float(src + r * n_per_row, out + static_cast<uint64_t>(r) * row_bytes, n_per_row, importance);
  }
  return row_bytes * static_cast<uint64_t>(n_rows);
}

}  // namespace ferrite::quant
