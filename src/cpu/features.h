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
  bool bmi2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512dq = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  // AMX int8 and bf16 tiles, and the kernel granted this process the tile
  // state (Linux hands it out on request).
  bool amx = false;
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

// The dispatch cap: the highest instruction-set level the kernels may use,
// named as FERRITE_ISA and `ferrite bench --isa` name it. The x86 levels
// each include the ones before them:
//   scalar      the plain C++ reference kernels
//   avx2        x86-64-v3: AVX2, FMA, F16C (and BMI2)
//   avx512      + AVX-512 F/BW/DQ/VL (ferrite has no kernels needing only
//               these: this level runs the avx2 kernels)
//   avx512vnni  + AVX-512 VNNI and BF16: the *_avx512.cpp kernels (Isa::Avx512)
//   amx         + AMX int8/bf16 tiles for batches of 16+ tokens
// and on aarch64 `neon` (Isa::Neon) below `neon_i8mm` (Isa::NeonI8mm: + SMMLA). A cap above what the host has is
// clamped to the host; a level of the other architecture gives scalar.
enum class IsaCap : int { Scalar = 0, Avx2 = 1, Avx512 = 2, Avx512Vnni = 3, Amx = 4, Neon = 5, NeonI8mm = 6 };

// "scalar", "avx2", "avx512", "avx512vnni", "amx", "neon", "neon_i8mm".
std::string isa_cap_name(IsaCap cap);

// The cap of a name above; InvalidArgument (listing the names) otherwise.
IsaCap parse_isa_cap(const std::string& name);

// The highest cap this processor supports.
IsaCap host_isa_cap();

// The cap in effect (host_isa_cap() unless lowered).
IsaCap active_isa_cap();

// Lowers (or restores) the cap: clamped to the host; sets the kernel level
// (active_isa()) and whether AMX tiles may be used. Returns the cap in
// effect. Not thread-safe with running kernels: call it between evaluations.
IsaCap set_isa_cap(IsaCap cap);

// The kernel level a cap runs (avx512 -> Avx2, avx512vnni and amx -> Avx512).
Isa isa_of_cap(IsaCap cap);

// Whether the cap in effect lets the AMX kernels run (they also need the
// hardware and FERRITE_AMX not 0: see amx_available()).
bool amx_allowed();

// Applies FERRITE_ISA from the environment, once per process (later calls do
// nothing): the only place the variable is read. The `ferrite` binary calls
// it at startup, Model::load and Context before they choose kernels.
// InvalidArgument for an unknown name.
void apply_isa_env();

// What `ferrite --version` and `ferrite bench` print: the cap in effect and
// the host's, e.g. "avx2 (host avx2)" or "avx512 (avx2 kernels; host amx)".
std::string isa_summary();

}  // namespace ferrite::cpu
