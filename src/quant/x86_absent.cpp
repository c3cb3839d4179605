// Targets other than x86-64 (the aarch64 cross build): the x86 kernels
// (*_avx2.cpp, *_avx512.cpp) are not compiled there, so their entry points
// are defined here for the dispatch code to link. type_traits.cpp never
// selects them on such a target (its level stays the reference); reaching one
// anyway is a programming error, reported by an exception.
#if !defined(__x86_64__)

#include <stdexcept>
#include <string>

#include "quant/dequant_simd.h"
#include "quant/round_levels.h"

namespace ferrite::quant {
namespace {

[[noreturn]] void absent(const char* name) {
  throw std::logic_error(std::string(name) + ": x86 kernel called on a target without it");
}

}  // namespace

namespace avx2 {
void dequant_f16(const void*, float*, int64_t) { absent("avx2::dequant_f16"); }
void dequant_bf16(const void*, float*, int64_t) { absent("avx2::dequant_bf16"); }
void dequant_q4_0(const void*, float*, int64_t) { absent("avx2::dequant_q4_0"); }
void dequant_q8_0(const void*, float*, int64_t) { absent("avx2::dequant_q8_0"); }
void dequant_q4_k(const void*, float*, int64_t) { absent("avx2::dequant_q4_k"); }
void dequant_q6_k(const void*, float*, int64_t) { absent("avx2::dequant_q6_k"); }
}  // namespace avx2

namespace avx512 {
void dequant_f16(const void*, float*, int64_t) { absent("avx512::dequant_f16"); }
void dequant_bf16(const void*, float*, int64_t) { absent("avx512::dequant_bf16"); }
void dequant_q4_0(const void*, float*, int64_t) { absent("avx512::dequant_q4_0"); }
void dequant_q8_0(const void*, float*, int64_t) { absent("avx512::dequant_q8_0"); }
void dequant_q4_k(const void*, float*, int64_t) { absent("avx512::dequant_q4_k"); }
void dequant_q6_k(const void*, float*, int64_t) { absent("avx512::dequant_q6_k"); }
LevelSums round_levels(const float*, const float*, const float*, int, float, float, int, int, int*) {
  absent("avx512::round_levels");
}
}  // namespace avx512

}  // namespace ferrite::quant

#endif  // !defined(__x86_64__)
