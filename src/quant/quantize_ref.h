// Quantizers float32 -> each type, one row at a time (see FromFloatFn in
// type_traits.h). `w` is the row's importance weights or nullptr.
#pragma once

#include <cstdint>

namespace ferrite::quant::ref {

void quantize_f32(const float* x, void* dst, int64_t n, const float* w);
void quantize_f16(const float* x, void* dst, int64_t n, const float* w);
void quantize_bf16(const float* x, void* dst, int64_t n, const float* w);
void quantize_q4_0(const float* x, void* dst, int64_t n, const float* w);
void quantize_q4_1(const float* x, void* dst, int64_t n, const float* w);
void quantize_q5_0(const float* x, void* dst, int64_t n, const float* w);
void quantize_q5_1(const float* x, void* dst, int64_t n, const float* w);
void quantize_q8_0(const float* x, void* dst, int64_t n, const float* w);
void quantize_q8_1(const float* x, void* dst, int64_t n, const float* w);

void quantize_q2_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_q3_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_q4_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_q5_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_q6_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_q8_k(const float* x, void* dst, int64_t n, const float* w);
void quantize_tq1_0(const float* x, void* dst, int64_t n, const float* w);
void quantize_tq2_0(const float* x, void* dst, int64_t n, const float* w);

void quantize_iq4_nl(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq4_xs(const float* x, void* dst, int64_t n, const float* w);
void quantize_mxfp4(const float* x, void* dst, int64_t n, const float* w);  // quant/mxfp4.cpp

void quantize_iq3_xxs(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq3_s(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq2_xxs(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq2_xs(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq2_s(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq1_s(const float* x, void* dst, int64_t n, const float* w);
void quantize_iq1_m(const float* x, void* dst, int64_t n, const float* w);

}  // namespace ferrite::quant::ref
