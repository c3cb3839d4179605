// Registry of what ferrite can do with each weight type: the reference
// dequantizer, the fastest dequantizer this CPU supports (chosen once at run
// time) and the quantizer from float32. The runtime looks kernels up here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace ferrite::quant {

// `n` elements (a multiple of the block size) of blocks at `src` to float32.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);

// Quantizes one row of `n` floats (a multiple of the block size) into blocks
// at `dst`. `importance` holds n non-negative weights (the importance matrix
// entries of the row's columns) or is nullptr.
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n, const float* importance);

struct TypeTraits {
  TensorType type;
  const char* name;          // as ggml prints it ("q4_K")
  int64_t block_size;        // elements per block
  size_t block_bytes;        // bytes per block
  ToFloatFn to_float_ref;    // plain C++ reference
  ToFloatFn to_float;        // fastest for this CPU (== to_float_ref without a fast path)
  const char* to_float_isa;  // "ref", "avx2" or "avx512"
  FromFloatFn from_float;    // nullptr when ferrite cannot quantize to the type
  bool needs_imatrix;        // quantizing without an importance matrix gives unusable weights
};

// The traits of `type`, or nullptr for a type ferrite cannot dequantize.
const TypeTraits* find_type_traits(TensorType type);

// As find_type_traits, but throws InvalidArgument naming the type.
const TypeTraits& type_traits(TensorType type);

// The highest SIMD level the dequantizers and the quantizers' helpers may
// use. The CPU's dispatch cap passes its level down (cpu::set_isa_cap, so
// FERRITE_ISA and --isa cap these too); unset, the best this CPU runs.
enum class DequantCap : int { kRef = 0, kAvx2 = 1, kAvx512 = 2 };
void set_dequant_cap(DequantCap cap);

// The level the fast paths use now: the lower of the CPU's and the cap.
DequantCap dequant_level();

// dequant_level() as a name: "avx512", "avx2" or "ref".
const char* dequant_isa();

// Whether this x86 CPU has F16C (false on other targets).
bool cpu_has_f16c();

}  // namespace ferrite::quant
