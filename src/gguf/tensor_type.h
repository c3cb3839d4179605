// Tensor element types as stored in GGUF. The numeric values are on disk and
// must never change; gaps are types ggml has retired.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ferrite {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  // 4, 5: retired Q4_2, Q4_3
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  // 31..33: retired Q4_0_4_4, Q4_0_4_8, Q4_0_8_8
  TQ1_0 = 34,
  TQ2_0 = 35,
  // 36..38: retired IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8
  MXFP4 = 39,
};

// Size facts of a type: elements per block and bytes per block.
struct TensorTypeInfo {
  TensorType type;
  const char* name;       // lower-case name as ggml prints it ("q4_K")
  uint32_t block_size;    // elements per block
  uint32_t block_bytes;   // bytes per block
  bool quantized;
};

// The facts for `type`, or nullptr when the value is not a known type.
const TensorTypeInfo* tensor_type_info(uint32_t raw_type);
inline const TensorTypeInfo* tensor_type_info(TensorType t) {
  return tensor_type_info(static_cast<uint32_t>(t));
}

// Name of a known type ("q4_K"); "type(N)" for an unknown value.
std::string tensor_type_name(TensorType t);

// Looks a type up by name, case-insensitively ("Q4_K", "q4_k", "bf16").
std::optional<TensorType> tensor_type_from_name(std::string_view name);

// Bytes of a row of `n` elements of `type`; n must be a multiple of the block
// size (checked by the caller; see gguf reader).
uint64_t tensor_row_bytes(TensorType type, uint64_t n);

// Every known type, in enum order.
const TensorTypeInfo* tensor_types_begin();
const TensorTypeInfo* tensor_types_end();

}  // namespace ferrite
