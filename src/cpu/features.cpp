#include "cpu/features.h"

#include <algorithm>
#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace ferrite::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// CPUID leaf 1, ECX bit 29 (clang 14, which builds the fuzzers, does not
// know "f16c" in __builtin_cpu_supports).
bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = has_f16c();
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#elif defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.asimd = (hwcap & HWCAP_ASIMD) != 0;
  f.asimddp = (hwcap & HWCAP_ASIMDDP) != 0;
  f.fp16 = (hwcap & HWCAP_FPHP) != 0 && (hwcap & HWCAP_ASIMDHP) != 0;
#endif
  return f;
}

Isa best(const CpuFeatures& f) {
  if (f.asimd && f.asimddp && f.fp16) return Isa::Neon;
  const bool avx2 = f.avx2 && f.fma && f.f16c;
  if (avx2 && f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512vnni && f.avx512bf16) {
    return Isa::Avx512;
  }
  return avx2 ? Isa::Avx2 : Isa::Scalar;
}

bool is_x86(Isa isa) { return isa == Isa::Avx2 || isa == Isa::Avx512; }

// Both levels of the x86 family, or both Neon (Scalar is in neither).
bool same_family(Isa a, Isa b) { return is_x86(a) == is_x86(b) && (a == Isa::Neon) == (b == Isa::Neon); }

std::atomic<int>& level() {
  static std::atomic<int> value{static_cast<int>(detected_isa())};
  return value;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

Isa detected_isa() {
  static const Isa isa = best(cpu_features());
  return isa;
}

Isa active_isa() { return static_cast<Isa>(level().load(std::memory_order_relaxed)); }

Isa set_isa(Isa isa) {
  const Isa top = detected_isa();
  const Isa clamped = isa == Isa::Scalar || !same_family(isa, top)
                          ? Isa::Scalar
                          : static_cast<Isa>(std::min(static_cast<int>(isa), static_cast<int>(top)));
  level().store(static_cast<int>(clamped), std::memory_order_relaxed);
  return clamped;
}

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Neon:
      return "neon";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "unknown";
}

}  // namespace ferrite::cpu
