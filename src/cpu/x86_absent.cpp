// Targets other than x86-64 (the aarch64 cross build): the x86 kernels
// (*_avx2.cpp, *_avx512.cpp, *_amx.cpp) are not compiled there, so their entry
// points are defined here for the dispatch code (and the tests that name them)
// to link. The tables say "no such kernel" (nullptr, the reference table);
// direct kernels are unreachable because active_isa() is never an x86 level
// on such a target, and report a programming error if reached anyway.
#if !defined(__x86_64__)

#include <stdexcept>
#include <string>

#include "cpu/dot/act_quant.h"
#include "cpu/attention/attention_avx2.h"
#include "cpu/attention/attention_avx512.h"
#include "cpu/attention/attention_rows.h"
#include "cpu/ops/gelu_f16.h"
#include "cpu/hw_limits.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_legacy.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/dot/quant_dot_iq.h"
#include "cpu/dot/quant_dot_k.h"
#include "cpu/vec_ops.h"

namespace ferrite::cpu {
namespace {

[[noreturn]] void absent(const char* name) {
  throw std::logic_error(std::string(name) + ": x86 kernel called on a target without it");
}

}  // namespace

const QuantDot* quant_dot_avx2(TensorType) { return nullptr; }
const QuantDot* quant_dot_avx512(TensorType) { return nullptr; }
const QuantDot* quant_dot_k_avx2(TensorType) { return nullptr; }
const QuantDot* quant_dot_k_avx512(TensorType) { return nullptr; }
const QuantDot* quant_dot_iq_avx2(TensorType) { return nullptr; }
const QuantDot* quant_dot_iq1_avx2(TensorType) { return nullptr; }
const QuantDot* quant_dot_legacy_avx2(TensorType) { return nullptr; }
const QuantDot* quant_dot_ternary_avx2(TensorType) { return nullptr; }
const VecOps& vec_ops_avx2() { return vec_ops_ref(); }
const VecOps& vec_ops_avx512() { return vec_ops_ref(); }
PackedFloatKernel packed_float_kernel_avx2(TensorType) { return nullptr; }
PackedFloatKernel packed_float_kernel_avx512(TensorType) { return nullptr; }
PackedFloatKernel packed_float_kernel_amx_impl(TensorType) { return nullptr; }
PackedFloatKernel packed_float_pair_kernel_avx512(TensorType) { return nullptr; }
PackedKernel packed_kernel_avx2(TensorType) { return nullptr; }
PackedKernel packed_legacy_avx2(TensorType) { return nullptr; }
PackedKernel packed_kernel_avx512(TensorType) { return nullptr; }
PackedKernel packed_pair_kernel_avx512(TensorType) { return nullptr; }
PackedKernel packed_kernel_amx_impl(TensorType) { return nullptr; }
bool attention_avx512_applies(const AttentionArgs&) { return false; }
bool attention_avx2_applies(const AttentionArgs&) { return false; }
double peak_loop_avx2(PeakKind, long) { return 0.0; }
double peak_loop_avx512(PeakKind, long) { return 0.0; }
uint64_t read_sum_avx2(const uint64_t*, size_t) { return 0; }
uint64_t read_sum_avx512(const uint64_t*, size_t) { return 0; }

void quantize_q8_k_avx512(const float*, void*, int64_t) { absent("quantize_q8_k_avx512"); }
void quantize_q8_k_avx2(const float*, void*, int64_t) { absent("quantize_q8_k_avx2"); }
void quantize_q8_0_avx2(const float*, void*, int64_t) { absent("quantize_q8_0_avx2"); }
void quantize_q8_0_avx2(const float*, void*, float*, int32_t*, int64_t) { absent("quantize_q8_0_avx2"); }
void attention_avx512(const AttentionArgs&, ThreadPool&, AttentionScratch&) { absent("attention_avx512"); }
void attention_avx2(const AttentionArgs&, ThreadPool&, AttentionScratch&) { absent("attention_avx2"); }
void attention_rows_avx512(const AttentionArgs&, ThreadPool&, AttentionScratch&) { absent("attention_rows_avx512"); }
void attention_rows_avx2(const AttentionArgs&, ThreadPool&, AttentionScratch&) { absent("attention_rows_avx2"); }
void geglu_f16_avx512(const uint16_t*, const float*, const float*, int64_t, float*) { absent("geglu_f16_avx512"); }
void geglu_f16_avx2(const uint16_t*, const float*, const float*, int64_t, float*) { absent("geglu_f16_avx2"); }
void packed_q6_k_avx512(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q6_k_avx512");
}
void packed_q4_k_avx512(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q4_k_avx512");
}
void packed_q4_k_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q4_k_avx2");
}
void packed_q6_k_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q6_k_avx2");
}
void packed_q5_k_avx512(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q5_k_avx512");
}
void packed_iq4_xs_avx512(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_iq4_xs_avx512");
}
void packed_q5_k_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_q5_k_avx2");
}
void packed_iq4_xs_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_iq4_xs_avx2");
}
void packed_iq2_xxs_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_iq2_xxs_avx2");
}
void packed_iq2_xxs_avx512(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_iq2_xxs_avx512");
}
void packed_iq2_xxs_wide_avx2(const uint8_t*, const PackedActs&, int64_t, int64_t, float*, int64_t) {
  absent("packed_iq2_xxs_wide_avx2");
}

}  // namespace ferrite::cpu

#endif  // !defined(__x86_64__)
