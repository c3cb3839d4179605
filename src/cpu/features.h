// CPU feature detection and the instruction-set level the kernels use.
// One binary runs everywhere: the fast paths (*_avx2.cpp, *_avx512.cpp) are
// chosen at run time from what the processor supports. Tests may lower the
// level (never raise it above what the CPU has) to exercise every path.
#pragma once

#include <string>

namespace ferrite::cpu {

// Kernel levels, ordered: each includes the ones below it.
enum class Isa : int {
  Scalar = 0,  // plain C++, the reference
  Avx2 = 1,    // AVX2 + FMA + F16C
  Avx512 = 2,  // AVX-512 F/BW/DQ/VL + VNNI + BF16
};

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
};

// What this processor supports (detected once).
const CpuFeatures& cpu_features();

// The best level this processor supports.
Isa detected_isa();

// The level kernels use now: detected_isa() unless lowered by set_isa().
Isa active_isa();

// Sets the level (clamped to detected_isa()); returns the level in effect.
// Not thread-safe with running kernels: call it between evaluations.
Isa set_isa(Isa isa);

// "scalar", "avx2", "avx512".
std::string isa_name(Isa isa);

}  // namespace ferrite::cpu
