// CPU feature detection and the instruction-set level the kernels use.
// One binary runs everywhere: the fast paths (*_avx2.cpp, *_avx512.cpp) are
// chosen at run time from what the processor supports. Tests may lower the
// level (never raise it above what the CPU has) to exercise every path.
#pragma once

#include <string>

namespace ferrite::cpu {

// Kernel levels. Two families above Scalar: x86-64 (Avx2 < Avx512, each
// includes the one below) and aarch64 (Neon < NeonI8mm). The aarch64 levels
// sort below every x86 level, so the dispatch tests `isa >= Isa::Avx2` /
// `isa == Isa::Avx512` are false for them; a level of one family is never
// chosen on the other (set_isa turns it into Scalar), so compare levels only
// within a family (is_neon()).
enum class Isa : int {
  Scalar = 0,    // plain C++, the reference
  Neon = 1,      // aarch64: Advanced SIMD + dot product (SDOT) + fp16 arithmetic
  NeonI8mm = 2,  // Neon + the int8 matrix multiply (SMMLA, FEAT_I8MM)
  Avx2 = 3,      // AVX2 + FMA + F16C
  Avx512 = 4,    // AVX-512 F/BW/DQ/VL + VNNI + BF16
};

// True for the aarch64 levels.
constexpr bool is_neon(Isa isa) { return isa == Isa::Neon || isa == Isa::NeonI8mm; }

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  // aarch64 (from getauxval(AT_HWCAP)).
  bool asimd = false;    // Advanced SIMD
  bool asimddp = false;  // SDOT/UDOT
  bool fp16 = false;     // half-precision scalar (FPHP) and vector (ASIMDHP) arithmetic
  // aarch64 (from getauxval(AT_HWCAP2)).
  bool i8mm = false;  // SMMLA/UMMLA/USMMLA (FEAT_I8MM)
  bool bf16 = false;  // BFDOT/BFMMLA/BFCVT (FEAT_BF16)
};

// What this processor supports (detected once).
const CpuFeatures& cpu_features();

// The best level this processor supports.
Isa detected_isa();

// The level kernels use now: detected_isa() unless lowered by set_isa().
Isa active_isa();

// Sets the level (clamped to detected_isa(); a level of the other
// architecture gives Scalar); returns the level in effect.
// Not thread-safe with running kernels: call it between evaluations.
Isa set_isa(Isa isa);

// "scalar", "neon", "neon_i8mm", "avx2", "avx512".
std::string isa_name(Isa isa);

}  // namespace ferrite::cpu
