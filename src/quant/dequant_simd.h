// Fast dequantizers (same contract and bit-identical output as the ones in
// dequant_ref.h). Defined in dequant_avx2.cpp / dequant_avx512.cpp; call them
// only on a CPU that has the ISA (type_traits.cpp checks).
#pragma once

#include <cstdint>

namespace ferrite::quant::avx2 {
void dequant_f16(const void* src, float* dst, int64_t n);
void dequant_bf16(const void* src, float* dst, int64_t n);
void dequant_q4_0(const void* src, float* dst, int64_t n);
void dequant_q8_0(const void* src, float* dst, int64_t n);
void dequant_q4_k(const void* src, float* dst, int64_t n);
void dequant_q6_k(const void* src, float* dst, int64_t n);
}  // namespace ferrite::quant::avx2

namespace ferrite::quant::avx512 {
void dequant_f16(const void* src, float* dst, int64_t n);
void dequant_bf16(const void* src, float* dst, int64_t n);
void dequant_q4_0(const void* src, float* dst, int64_t n);
void dequant_q8_0(const void* src, float* dst, int64_t n);
void dequant_q4_k(const void* src, float* dst, int64_t n);
void dequant_q6_k(const void* src, float* dst, int64_t n);
}  // namespace ferrite::quant::avx512
