// Weight matrices on the GPU. Q4_0 and Q8_0 are repacked at upload so that
// each 32-element block's quants are 16-byte aligned (quants of all blocks
// first, [n, k/32, 16 or 32 bytes], then the f16 scales [n, k/32]); Q4_K and
// Q6_K keep the GGUF block layout (rows of whole blocks); F16/F32 are rows.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/device_buffer.h"
#include "gguf/tensor_type.h"

namespace ferrite::cuda {

struct GpuMatrix {
  TensorType type = TensorType::F32;
  int64_t n = 0;                     // rows
  int64_t k = 0;                     // elements per row
  const uint8_t* data = nullptr;     // quants (or the rows)
  const uint16_t* scales = nullptr;  // Q4_0/Q8_0: f16 d of each block [n, k/32]; else null
  uint64_t row_bytes = 0;            // Q4_K/Q6_K/F16/F32: bytes per row
};

// Rows [r0, r0 + rows) of m as a matrix of its own (no copy).
GpuMatrix row_slice(const GpuMatrix& m, int64_t r0, int64_t rows);

// True for the weight types the GPU path multiplies.
bool gpu_supports(TensorType t);

// Bytes a matrix of this type and shape takes on the GPU.
uint64_t gpu_matrix_bytes(TensorType t, int64_t n, int64_t k);

// Uploads host data (GGUF layout, n rows of k) into `buf` (resized) and
// returns the view. Throws InvalidArgument for unsupported types or shapes
// (quantized k not a multiple of the block).
GpuMatrix upload_matrix(TensorType t, int64_t n, int64_t k, const void* host, DeviceBuffer& buf,
                        const std::string& name);

}  // namespace ferrite::cuda
