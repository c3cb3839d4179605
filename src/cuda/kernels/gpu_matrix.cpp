#include "cuda/kernels/gpu_matrix.h"

#include <cstring>
#include <vector>

#include "core/error.h"
#include "cuda/kernels/iq_tables.h"
#include "cuda/kernels/ops.h"
#include "quant/blocks.h"

namespace ferrite::cuda {
namespace {

constexpr int64_t kBlock = quant::kQK;    // 32
constexpr int64_t kBlockK = quant::kQKK;  // 256
constexpr int64_t kQ4Bytes = kBlock / 2;  // quants of one Q4_0/Q4_1/Q5_0/Q5_1 block (low nibbles)
constexpr int64_t kQ8Bytes = kBlock;      // quants of one Q8_0 block
constexpr uint64_t kPadTo = 16;           // Q2_K/Q3_K blocks are padded to a multiple of this

// Elements per block of t (1 for the float types and unknown values).
int64_t block_of(TensorType t) {
  const TensorTypeInfo* info = tensor_type_info(t);
  return info != nullptr ? static_cast<int64_t>(info->block_size) : 1;
}

bool has_high(TensorType t) { return t == TensorType::Q5_0 || t == TensorType::Q5_1; }
bool has_min(TensorType t) { return t == TensorType::Q4_1 || t == TensorType::Q5_1; }
bool padded(TensorType t) { return t == TensorType::Q2_K || t == TensorType::Q3_K; }

// Splits GGUF blocks into quants, fifth bits (Q5 types) and scales (d, or d and m).
template <typename Block>
void repack(const Block* src, int64_t n_blocks, int64_t quant_bytes, uint8_t* quants, uint32_t* high,
            uint16_t* scales) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    std::memcpy(quants + b * quant_bytes, src[b].qs, static_cast<size_t>(quant_bytes));
    if constexpr (requires(const Block& x) { x.qh; }) std::memcpy(high + b, src[b].qh, sizeof(uint32_t));
    if constexpr (requires(const Block& x) { x.m; }) {
      scales[2 * b] = src[b].d;
      scales[2 * b + 1] = src[b].m;
    } else {
      scales[b] = src[b].d;
    }
  }
}

// Where the parts of a repacked matrix of n_blocks blocks start.
struct RepackedParts {
  uint64_t high = 0, scales = 0;  // byte offsets
};

RepackedParts parts_of(TensorType t, int64_t n_blocks) {
  RepackedParts p;
  p.high = static_cast<uint64_t>(n_blocks * (t == TensorType::Q8_0 ? kQ8Bytes : kQ4Bytes));
  p.scales = p.high + (has_high(t) ? static_cast<uint64_t>(n_blocks) * sizeof(uint32_t) : 0);
  return p;
}

}  // namespace

bool gpu_repacked(TensorType t) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q4_1:
    case TensorType::Q5_0:
    case TensorType::Q5_1:
    case TensorType::Q8_0:
      return true;
    default:
      return false;
  }
}

uint64_t gpu_block_bytes(TensorType t) {
  const uint64_t bytes = tensor_row_bytes(t, static_cast<uint64_t>(block_of(t)));
  return padded(t) ? (bytes + kPadTo - 1) / kPadTo * kPadTo : bytes;
}

GpuMatrix row_slice(const GpuMatrix& m, int64_t r0, int64_t rows) {
  if (r0 < 0 || rows < 0 || r0 + rows > m.n) throw InvalidArgument("row_slice: rows outside the matrix");
  GpuMatrix s = m;
  s.n = rows;
  if (gpu_repacked(m.type)) {
    const int64_t blocks = r0 * (m.k / kBlock);
    s.data = m.data + blocks * (m.type == TensorType::Q8_0 ? kQ8Bytes : kQ4Bytes);
    s.scales = m.scales + blocks * (has_min(m.type) ? 2 : 1);
    if (m.high != nullptr) s.high = m.high + blocks;
  } else {
    s.data = m.data + static_cast<uint64_t>(r0) * m.row_bytes;
  }
  return s;
}

bool gpu_supports(TensorType t) {
  // The float types, and every quantized type the f16 dequantizer takes (each
  // has the GEMV and exact paths too: tests/cuda check them per type).
  return t == TensorType::F32 || t == TensorType::F16 || dequant_f16_supports(t);
}

uint64_t gpu_matrix_bytes(TensorType t, int64_t n, int64_t k) {
  if (padded(t)) return static_cast<uint64_t>(n) * static_cast<uint64_t>(k / kBlockK) * gpu_block_bytes(t);
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
  m.row_bytes = padded(t) ? static_cast<uint64_t>(k / kBlockK) * gpu_block_bytes(t)
                          : tensor_row_bytes(t, static_cast<uint64_t>(k));
  const uint64_t bytes = gpu_matrix_bytes(t, n, k);
  buf.resize(bytes);
  if (gpu_repacked(t)) {
    const int64_t n_blocks = n * (k / kBlock);
    const int64_t qbytes = t == TensorType::Q8_0 ? kQ8Bytes : kQ4Bytes;
    const RepackedParts parts = parts_of(t, n_blocks);
    std::vector<uint8_t> staged(static_cast<size_t>(bytes));
    uint8_t* quants = staged.data();
    auto* high = reinterpret_cast<uint32_t*>(staged.data() + parts.high);
    auto* scales = reinterpret_cast<uint16_t*>(staged.data() + parts.scales);
    switch (t) {
      case TensorType::Q4_0:
        repack(static_cast<const quant::BlockQ4_0*>(host), n_blocks, qbytes, quants, high, scales);
        break;
      case TensorType::Q4_1:
        repack(static_cast<const quant::BlockQ4_1*>(host), n_blocks, qbytes, quants, high, scales);
        break;
      case TensorType::Q5_0:
        repack(static_cast<const quant::BlockQ5_0*>(host), n_blocks, qbytes, quants, high, scales);
        break;
      case TensorType::Q5_1:
        repack(static_cast<const quant::BlockQ5_1*>(host), n_blocks, qbytes, quants, high, scales);
        break;
      default:
        repack(static_cast<const quant::BlockQ8_0*>(host), n_blocks, qbytes, quants, high, scales);
        break;
    }
    FERRITE_CUDA_CHECK(cudaMemcpy(buf.as(), staged.data(), bytes, cudaMemcpyHostToDevice));
    m.data = buf.as<uint8_t>();
    m.scales = reinterpret_cast<const uint16_t*>(buf.as<uint8_t>() + parts.scales);
    if (has_high(t)) m.high = reinterpret_cast<const uint32_t*>(buf.as<uint8_t>() + parts.high);
  } else if (padded(t)) {
    // Each GGUF block into a zero-padded slot.
    const uint64_t src_bytes = tensor_row_bytes(t, static_cast<uint64_t>(kBlockK));
    const uint64_t dst_bytes = gpu_block_bytes(t);
    const uint64_t n_blocks = static_cast<uint64_t>(n) * static_cast<uint64_t>(k / kBlockK);
    std::vector<uint8_t> staged(static_cast<size_t>(bytes), 0);
    const auto* src = static_cast<const uint8_t*>(host);
    for (uint64_t b = 0; b < n_blocks; ++b) std::memcpy(staged.data() + b * dst_bytes, src + b * src_bytes, src_bytes);
    FERRITE_CUDA_CHECK(cudaMemcpy(buf.as(), staged.data(), bytes, cudaMemcpyHostToDevice));
    m.data = buf.as<uint8_t>();
  } else {
    FERRITE_CUDA_CHECK(cudaMemcpy(buf.as(), host, bytes, cudaMemcpyHostToDevice));
    m.data = buf.as<uint8_t>();
    m.grid = iq_device_table(t);
  }
  return m;
}

}  // namespace ferrite::cuda
