#include "cuda/kernels/iq_tables.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "cuda/kernels/check.h"
#include "quant/iq_grids.h"
#include "quant/mxfp4.h"

namespace ferrite::cuda {
namespace {

// Byte offsets of the tables in one device allocation (each 16-byte aligned).
struct Layout {
  size_t iq2xxs, iq2xs, iq2s, iq3xxs, iq3s, iq1s, iq4nl, mxfp4, total;
};

template <typename Array>
size_t bytes_of(const Array& a) {
  return sizeof(a[0]) * a.size();
}

Layout layout() {
  Layout l{};
  size_t at = 0;
  auto place = [&](size_t bytes) {
    const size_t here = at;
    at += (bytes + 15) / 16 * 16;
    return here;
  };
  l.iq2xxs = place(bytes_of(quant::kIq2xxsGrid));
  l.iq2xs = place(bytes_of(quant::kIq2xsGrid));
  l.iq2s = place(bytes_of(quant::kIq2sGrid));
  l.iq3xxs = place(bytes_of(quant::kIq3xxsGrid));
  l.iq3s = place(bytes_of(quant::kIq3sGrid));
  l.iq1s = place(bytes_of(quant::kIq1sGrid));
  l.iq4nl = place(bytes_of(quant::kIq4nlValues));
  l.mxfp4 = place(bytes_of(quant::kMxfp4Values));
  l.total = at;
  return l;
}

// One copy per device, kept for the life of the process.
const uint8_t* device_tables() {
  static std::mutex mu;
  static std::map<int, uint8_t*> copies;
  int device = 0;
  FERRITE_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mu);
  auto it = copies.find(device);
  if (it != copies.end()) return it->second;
  const Layout l = layout();
  std::vector<uint8_t> host(l.total, 0);
  auto put = [&](size_t at, const auto& table) { std::memcpy(host.data() + at, table.data(), bytes_of(table)); };
  put(l.iq2xxs, quant::kIq2xxsGrid);
  put(l.iq2xs, quant::kIq2xsGrid);
  put(l.iq2s, quant::kIq2sGrid);
  put(l.iq3xxs, quant::kIq3xxsGrid);
  put(l.iq3s, quant::kIq3sGrid);
  put(l.iq1s, quant::kIq1sGrid);
  put(l.iq4nl, quant::kIq4nlValues);
  put(l.mxfp4, quant::kMxfp4Values);
  void* dev = nullptr;
  FERRITE_CUDA_CHECK(cudaMalloc(&dev, l.total));
  const cudaError_t copied = cudaMemcpy(dev, host.data(), l.total, cudaMemcpyHostToDevice);
  if (copied != cudaSuccess) cudaFree(dev);
  FERRITE_CUDA_CHECK(copied);
  copies[device] = static_cast<uint8_t*>(dev);
  return static_cast<uint8_t*>(dev);
}

}  // namespace

bool iq_gpu_type(TensorType t) {
  switch (t) {
    case TensorType::IQ1_S:
    case TensorType::IQ1_M:
    case TensorType::IQ2_XXS:
    case TensorType::IQ2_XS:
    case TensorType::IQ2_S:
    case TensorType::IQ3_XXS:
    case TensorType::IQ3_S:
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS:
    case TensorType::TQ1_0:
    case TensorType::TQ2_0:
    case TensorType::MXFP4:
      return true;
    default:
      return false;
  }
}

const void* iq_device_table(TensorType t) {
  const Layout l = layout();
  size_t at = 0;
  switch (t) {
    case TensorType::IQ1_S:
    case TensorType::IQ1_M: at = l.iq1s; break;
    case TensorType::IQ2_XXS: at = l.iq2xxs; break;
    case TensorType::IQ2_XS: at = l.iq2xs; break;
    case TensorType::IQ2_S: at = l.iq2s; break;
    case TensorType::IQ3_XXS: at = l.iq3xxs; break;
    case TensorType::IQ3_S: at = l.iq3s; break;
    case TensorType::IQ4_NL:
    case TensorType::IQ4_XS: at = l.iq4nl; break;
    case TensorType::MXFP4: at = l.mxfp4; break;
    default: return nullptr;
  }
  return device_tables() + at;
}

}  // namespace ferrite::cuda
