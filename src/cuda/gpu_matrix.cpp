#include "cuda/gpu_matrix.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "quant/blocks.h"

namespace ferrite::cuda {
namespace {

constexpr int64_t kBlock = quant::kQK;    // 32
constexpr int64_t kBlockK = quant::kQKK;  // 256
constexpr int64_t kQ4Bytes = kBlock / 2;  // quants of one Q4_0 block
constexpr int64_t kQ8Bytes = kBlock;      // quants of one Q8_0 block

int64_t block_of(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q8_0:
      return kBlock;
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return kBlockK;
    default:
      return 1;
  }
}

// Splits GGUF blocks (scale first, then quants) into quants and scales.
template <typename Block, int64_t kQuantBytes>
void repack(const Block* src, int64_t n_blocks, uint8_t* quants, uint16_t* scales) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    std::memcpy(quants + b * kQuantBytes, src[b].qs, kQuantBytes);
    scales[b] = src[b].d;
  }
}

}  // namespace

GpuMatrix row_slice(const GpuMatrix& m, int64_t r0, int64_t rows) {
  if (r0 < 0 || rows < 0 || r0 + rows > m.n) throw InvalidArgument("row_slice: rows outside the matrix");
  GpuMatrix s = m;
  s.n = rows;
  if (m.type == TensorType::Q4_0 || m.type == TensorType::Q8_0) {
    const int64_t blocks = r0 * (m.k / kBlock);
    s.data = m.data + blocks * (m.type == TensorType::Q4_0 ? kQ4Bytes : kQ8Bytes);
    s.scales = m.scales + blocks;
  } else {
    s.data = m.data + static_cast<uint64_t>(r0) * m.row_bytes;
  }
  return s;
}

bool gpu_supports(TensorType t) {
  switch (t) {
    case TensorType::F32:
    case TensorType::F16:
    case TensorType::Q4_0:
    case TensorType::Q8_0:
    case TensorType::Q4_K:
    case TensorType::Q6_K:
      return true;
    default:
      return false;
  }
}

uint64_t gpu_matrix_bytes(TensorType t, int64_t n, int64_t k) {
  return static_cast<uint64_t>(n) * tensor_row_bytes(t, static_cast<uint64_t>(k));
}

GpuMatrix upload_matrix(TensorType t, int64_t n, int64_t k, const void* host, DeviceBuffer& buf,
                        const std::string& name) {
  if (!gpu_supports(t)) {
    throw InvalidArgument(name + ": weight type " + tensor_type_name(t) + " is not supported on the GPU yet");
  }
  if (k % block_of(t) != 0) {
    throw InvalidArgument(name + ": row length " + std::to_string(k) + " is not a multiple of the " +
                          tensor_type_name(t) + " block");
  }
  GpuMatrix m;
  m.type = t;
  m.n = n;
  m.k = k;
  m.row_bytes = tensor_row_bytes(t, static_cast<uint64_t>(k));
  const uint64_t bytes = gpu_matrix_bytes(t, n, k);
  buf.resize(bytes);
  if (t == TensorType::Q4_0 || t == TensorType::Q8_0) {
    const int64_t n_blocks = n * (k / kBlock);
    const int64_t qbytes = t == TensorType::Q4_0 ? kQ4Bytes : kQ8Bytes;
    std::vector<uint8_t> staged(static_cast<size_t>(bytes));
    uint8_t* quants = staged.data();
    auto* scales = reinterpret_cast<uint16_t*>(staged.data() + n_blocks * qbytes);
    if (t == TensorType::Q4_0) {
      repack<quant::BlockQ4_0, kQ4Bytes>(static_cast<const quant::BlockQ4_0*>(host), n_blocks, quants, scales);
    } else {
      repack<quant::BlockQ8_0, kQ8Bytes>(static_cast<const quant::BlockQ8_0*>(host), n_blocks, quants, scales);
    }
    FERRITE_CUDA_CHECK(cudaMemcpy(buf.as(), staged.data(), bytes, cudaMemcpyHostToDevice));
    m.data = buf.as<uint8_t>();
    m.scales = reinterpret_cast<const uint16_t*>(buf.as<uint8_t>() + n_blocks * qbytes);
  } else {
    FERRITE_CUDA_CHECK(cudaMemcpy(buf.as(), host, bytes, cudaMemcpyHostToDevice));
    m.data = buf.as<uint8_t>();
  }
  return m;
}

}  // namespace ferrite::cuda
