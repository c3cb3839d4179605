#include "cpu/features.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "core/error.h"
#include "quant/type_traits.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
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

#if defined(__x86_64__) && defined(__linux__)
// CPUID leaf 7 (EDX) bits and the Linux request for the AMX tile state.
constexpr unsigned kCpuidExtendedFeatures = 7;
constexpr unsigned kCpuidAmxBf16 = 1u << 22;
constexpr unsigned kCpuidAmxTile = 1u << 24;
constexpr unsigned kCpuidAmxInt8 = 1u << 25;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool detect_amx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(kCpuidExtendedFeatures, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  constexpr unsigned kNeeded = kCpuidAmxTile | kCpuidAmxInt8 | kCpuidAmxBf16;
  if ((edx & kNeeded) != kNeeded) return false;
  // Linux hands out the 8 KiB tile state only on request.
  return ::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}
#endif

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.fma = __builtin_cpu_supports("fma");
  f.f16c = has_f16c();
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
#endif
#if defined(__x86_64__) && defined(__linux__)
  f.amx = detect_amx();
#endif
#if defined(__aarch64__) && defined(__linux__)
  const unsigned long hwcap = getauxval(AT_HWCAP);
  f.asimd = (hwcap & HWCAP_ASIMD) != 0;
  f.asimddp = (hwcap & HWCAP_ASIMDDP) != 0;
  f.fp16 = (hwcap & HWCAP_FPHP) != 0 && (hwcap & HWCAP_ASIMDHP) != 0;
  const unsigned long hwcap2 = getauxval(AT_HWCAP2);
  f.i8mm = (hwcap2 & HWCAP2_I8MM) != 0;
  f.bf16 = (hwcap2 & HWCAP2_BF16) != 0;
#endif
  return f;
}

IsaCap best(const CpuFeatures& f) {
  if (f.asimd && f.asimddp && f.fp16) return f.i8mm ? IsaCap::NeonI8mm : IsaCap::Neon;
  if (!(f.avx2 && f.fma && f.f16c && f.bmi2)) return IsaCap::Scalar;
  if (!(f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl)) return IsaCap::Avx2;
  if (!(f.avx512vnni && f.avx512bf16)) return IsaCap::Avx512;
  return f.amx ? IsaCap::Amx : IsaCap::Avx512Vnni;
}

enum class Family { None, X86, Arm };

Family family(IsaCap c) {
  if (c == IsaCap::Scalar) return Family::None;
  return c == IsaCap::Neon || c == IsaCap::NeonI8mm ? Family::Arm : Family::X86;
}

IsaCap clamp_to_host(IsaCap cap) {
  const IsaCap host = host_isa_cap();
  if (family(cap) != family(host) || family(cap) == Family::None) return IsaCap::Scalar;
  return static_cast<IsaCap>(std::min(static_cast<int>(cap), static_cast<int>(host)));
}

// The cap in effect and its kernel level (kept apart: active_isa() is read
// by every product).
std::atomic<int>& cap_state() {
  static std::atomic<int> value{static_cast<int>(host_isa_cap())};
  return value;
}
std::atomic<int>& level_state() {
  static std::atomic<int> value{static_cast<int>(isa_of_cap(host_isa_cap()))};
  return value;
}

constexpr IsaCap kAllCaps[] = {IsaCap::Scalar, IsaCap::Avx2, IsaCap::Avx512, IsaCap::Avx512Vnni, IsaCap::Amx,
                               IsaCap::Neon, IsaCap::NeonI8mm};

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

IsaCap host_isa_cap() {
  static const IsaCap cap = best(cpu_features());
  return cap;
}

Isa isa_of_cap(IsaCap cap) {
  switch (cap) {
    case IsaCap::Scalar:
      return Isa::Scalar;
    case IsaCap::Avx2:
    case IsaCap::Avx512:
      return Isa::Avx2;
    case IsaCap::Avx512Vnni:
    case IsaCap::Amx:
      return Isa::Avx512;
    case IsaCap::Neon:
      return Isa::Neon;
    case IsaCap::NeonI8mm:
      return Isa::NeonI8mm;
  }
  return Isa::Scalar;
}

Isa detected_isa() { return isa_of_cap(host_isa_cap()); }

Isa active_isa() { return static_cast<Isa>(level_state().load(std::memory_order_relaxed)); }

IsaCap active_isa_cap() { return static_cast<IsaCap>(cap_state().load(std::memory_order_relaxed)); }

namespace {
quant::DequantCap dequant_cap_of(IsaCap cap) {
  switch (cap) {
    case IsaCap::Avx2:
      return quant::DequantCap::kAvx2;
    case IsaCap::Avx512:
    case IsaCap::Avx512Vnni:
    case IsaCap::Amx:
      return quant::DequantCap::kAvx512;
    default:
      return quant::DequantCap::kRef;  // scalar, and the Neon levels (no dequantizers of their own)
  }
}
}  // namespace

IsaCap set_isa_cap(IsaCap cap) {
  const IsaCap clamped = clamp_to_host(cap);
  const Isa level = isa_of_cap(clamped);
  cap_state().store(static_cast<int>(clamped), std::memory_order_relaxed);
  level_state().store(static_cast<int>(level), std::memory_order_relaxed);
  // The dequantizers (src/quant) keep their own x86 kernels (AVX-512 F/BW/
  // DQ/VL, no VNNI): the same cap.
  quant::set_dequant_cap(dequant_cap_of(clamped));
  return clamped;
}

Isa set_isa(Isa isa) {
  // A kernel level as the highest cap that runs it (Avx512: AMX too where present).
  IsaCap cap = IsaCap::Scalar;
  switch (isa) {
    case Isa::Scalar:
      cap = IsaCap::Scalar;
      break;
    case Isa::Neon:
      cap = IsaCap::Neon;
      break;
    case Isa::NeonI8mm:
      cap = IsaCap::NeonI8mm;
      break;
    case Isa::Avx2:
      cap = IsaCap::Avx2;
      break;
    case Isa::Avx512:
      cap = IsaCap::Amx;
      break;
  }
  return isa_of_cap(set_isa_cap(cap));
}

bool amx_allowed() { return active_isa_cap() == IsaCap::Amx; }

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar:
      return "scalar";
    case Isa::Neon:
      return "neon";
    case Isa::NeonI8mm:
      return "neon_i8mm";
    case Isa::Avx2:
      return "avx2";
    case Isa::Avx512:
      return "avx512";
  }
  return "unknown";
}

std::string isa_cap_name(IsaCap cap) {
  switch (cap) {
    case IsaCap::Scalar:
      return "scalar";
    case IsaCap::Avx2:
      return "avx2";
    case IsaCap::Avx512:
      return "avx512";
    case IsaCap::Avx512Vnni:
      return "avx512vnni";
    case IsaCap::Amx:
      return "amx";
    case IsaCap::Neon:
      return "neon";
    case IsaCap::NeonI8mm:
      return "neon_i8mm";
  }
  return "unknown";
}

IsaCap parse_isa_cap(const std::string& name) {
  std::string names;
  for (IsaCap c : kAllCaps) {
    if (isa_cap_name(c) == name) return c;
    names += (names.empty() ? "" : ", ") + isa_cap_name(c);
  }
  throw InvalidArgument("unknown instruction-set level '" + name + "' (one of " + names + ")");
}

void apply_isa_env() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("FERRITE_ISA");
    if (env == nullptr || *env == '\0') return;
    try {
      set_isa_cap(parse_isa_cap(env));
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(std::string("FERRITE_ISA: ") + e.what());
    }
  });
}

std::string isa_summary() {
  const IsaCap cap = active_isa_cap();
  std::string s = isa_cap_name(cap);
  const std::string kernels = isa_name(isa_of_cap(cap));
  const bool same_name = kernels == s || (cap == IsaCap::Avx512Vnni || cap == IsaCap::Amx);
  s += " (";
  if (!same_name) s += kernels + " kernels; ";
  s += "host " + isa_cap_name(host_isa_cap()) + ")";
  return s;
}

}  // namespace ferrite::cpu
