// Weight matrices on the GPU. The 32-element types are repacked at upload so
// that each block's quants are 16-byte aligned: quants of all blocks first
// ([n, k/32, 16 or 32 bytes]), then for Q5_0/Q5_1 the fifth bits of each
// block (u32 [n, k/32]), then the scales (Q4_0/Q5_0/Q8_0: f16 d [n, k/32];
// Q4_1/Q5_1: f16 pairs (d, m) [n, k/32, 2]). Q4_K, Q5_K and Q6_K keep the GGUF
// block layout (rows of whole blocks); Q2_K and Q3_K blocks are padded to a
// multiple of 16 bytes (Q2_K 84 -> 96, Q3_K 110 -> 112: the GGUF bytes,
// then zeros) so that their parts load as aligned vectors. F16/F32 are rows.
// The IQ and TQ types keep the GGUF block layout (rows of whole blocks);
// the IQ types' lookup tables (grids, IQ4 values) live in device memory
// (iq_tables.h), and `grid` points at the table of the matrix's type.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/kernels/device_buffer.h"
#include "gguf/tensor_type.h"

namespace ferrite::cuda {

struct GpuMatrix {
  TensorType type = TensorType::F32;
  int64_t n = 0;                     // rows
  int64_t k = 0;                     // elements per row
  const uint8_t* data = nullptr;     // quants (or the rows)
  const uint16_t* scales = nullptr;  // 32-element types: f16 d [n, k/32] (Q4_1/Q5_1: (d, m) [n, k/32, 2]); else null
  uint64_t row_bytes = 0;            // K types, F16/F32: bytes per row on the GPU (Q2_K/Q3_K padded)
  const uint32_t* high = nullptr;    // Q5_0/Q5_1: bit j = bit 4 of element j, per block [n, k/32]; else null
  const void* grid = nullptr;        // IQ types: the type's table in device memory (iq_tables.h); else null
};

// Rows [r0, r0 + rows) of m as a matrix of its own (no copy).
GpuMatrix row_slice(const GpuMatrix& m, int64_t r0, int64_t rows);

// True for the weight types the GPU path multiplies.
bool gpu_supports(TensorType t);

// Bytes of one block of type t in the GPU layout (padded Q2_K/Q3_K; the
// GGUF size otherwise), and whether t is one of the repacked 32-element types.
uint64_t gpu_block_bytes(TensorType t);
bool gpu_repacked(TensorType t);

// Bytes a matrix of this type and shape takes on the GPU.
uint64_t gpu_matrix_bytes(TensorType t, int64_t n, int64_t k);

// Uploads host data (GGUF layout, n rows of k) into `buf` (resized) and
// returns the view. Throws InvalidArgument for unsupported types or shapes
// (quantized k not a multiple of the block).
GpuMatrix upload_matrix(TensorType t, int64_t n, int64_t k, const void* host, DeviceBuffer& buf,
                        const std::string& name);

}  // namespace ferrite::cuda
