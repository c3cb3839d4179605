#include "quant/type_traits.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "core/error.h"
#include "quant/dequant_ref.h"
#include "quant/dequant_simd.h"
#include "quant/quantize_ref.h"

namespace ferrite::quant {

// CPUID leaf 1, ECX bit 29 (clang 14, which builds the fuzzers and the
// sanitizer build, does not know "f16c" in __builtin_cpu_supports).
bool cpu_has_f16c() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
#else
  return false;
#endif
}

namespace {

using Isa = DequantCap;

Isa detect_isa() {
  Isa isa = Isa::kRef;
#if defined(__x86_64__)  // the fast paths are x86 kernels (other targets use the reference)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()) {
    isa = Isa::kAvx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
      isa = Isa::kAvx512;
    }
  }
#endif
  return isa;
}

std::atomic<int> g_cap{static_cast<int>(Isa::kAvx512)};

struct Entry {
  TensorType type;
  ToFloatFn ref;
  ToFloatFn fast_avx2;    // nullptr: none
  ToFloatFn fast_avx512;  // nullptr: none
  FromFloatFn quantize;
  bool needs_imatrix;
};

// clang-format off
constexpr Entry kEntries[] = {
    {TensorType::F32,     ref::dequant_f32,     nullptr,            nullptr,              ref::quantize_f32, false},
    {TensorType::F16,     ref::dequant_f16,     avx2::dequant_f16,  avx512::dequant_f16,  ref::quantize_f16, false},
    {TensorType::BF16,    ref::dequant_bf16,    avx2::dequant_bf16, avx512::dequant_bf16, ref::quantize_bf16, false},
    {TensorType::Q4_0,    ref::dequant_q4_0,    avx2::dequant_q4_0, avx512::dequant_q4_0, ref::quantize_q4_0, false},
    {TensorType::Q4_1,    ref::dequant_q4_1,    nullptr,            nullptr,              ref::quantize_q4_1, false},
    {TensorType::Q5_0,    ref::dequant_q5_0,    nullptr,            nullptr,              ref::quantize_q5_0, false},
    {TensorType::Q5_1,    ref::dequant_q5_1,    nullptr,            nullptr,              ref::quantize_q5_1, false},
    {TensorType::Q8_0,    ref::dequant_q8_0,    avx2::dequant_q8_0, avx512::dequant_q8_0, ref::quantize_q8_0, false},
    {TensorType::Q8_1,    ref::dequant_q8_1,    nullptr,            nullptr,              ref::quantize_q8_1, false},
    {TensorType::Q2_K,    ref::dequant_q2_k,    nullptr,            nullptr,              ref::quantize_q2_k, false},
    {TensorType::Q3_K,    ref::dequant_q3_k,    nullptr,            nullptr,              ref::quantize_q3_k, false},
    {TensorType::Q4_K,    ref::dequant_q4_k,    avx2::dequant_q4_k, avx512::dequant_q4_k, ref::quantize_q4_k, false},
    {TensorType::Q5_K,    ref::dequant_q5_k,    nullptr,            nullptr,              ref::quantize_q5_k, false},
    {TensorType::Q6_K,    ref::dequant_q6_k,    avx2::dequant_q6_k, avx512::dequant_q6_k, ref::quantize_q6_k, false},
    {TensorType::Q8_K,    ref::dequant_q8_k,    nullptr,            nullptr,              ref::quantize_q8_k, false},
    {TensorType::IQ2_XXS, ref::dequant_iq2_xxs, nullptr,            nullptr,              ref::quantize_iq2_xxs, true},
    {TensorType::IQ2_XS,  ref::dequant_iq2_xs,  nullptr,            nullptr,              ref::quantize_iq2_xs,  true},
    {TensorType::IQ3_XXS, ref::dequant_iq3_xxs, nullptr,            nullptr,              ref::quantize_iq3_xxs, false},
    {TensorType::IQ1_S,   ref::dequant_iq1_s,   nullptr,            nullptr,              ref::quantize_iq1_s,   true},
    {TensorType::IQ4_NL,  ref::dequant_iq4_nl,  nullptr,            nullptr,              ref::quantize_iq4_nl, false},
    {TensorType::IQ3_S,   ref::dequant_iq3_s,   nullptr,            nullptr,              ref::quantize_iq3_s,   false},
    {TensorType::IQ2_S,   ref::dequant_iq2_s,   nullptr,            nullptr,              ref::quantize_iq2_s,   true},
    {TensorType::IQ4_XS,  ref::dequant_iq4_xs,  nullptr,            nullptr,              ref::quantize_iq4_xs, false},
    {TensorType::IQ1_M,   ref::dequant_iq1_m,   nullptr,            nullptr,              ref::quantize_iq1_m,   true},
    {TensorType::TQ1_0,   ref::dequant_tq1_0,   nullptr,            nullptr,              ref::quantize_tq1_0, false},
    {TensorType::TQ2_0,   ref::dequant_tq2_0,   nullptr,            nullptr,              ref::quantize_tq2_0, false},
    {TensorType::MXFP4,   ref::dequant_mxfp4,   nullptr,            nullptr,              ref::quantize_mxfp4, false},
};
// clang-format on

constexpr uint32_t kMaxRawType = 64;

constexpr int kLevels = 3;

// The traits as each level (ref, avx2, avx512) picks them, up to the CPU's.
struct Registry {
  Isa isa = Isa::kRef;
  std::array<std::array<TypeTraits, kMaxRawType>, kLevels> traits{};
  std::array<bool, kMaxRawType> present{};

  Registry() {
    isa = detect_isa();
    for (const Entry& e : kEntries) {
      const TensorTypeInfo* info = tensor_type_info(e.type);
      const auto raw = static_cast<uint32_t>(e.type);
      for (int level = 0; level < kLevels; ++level) {
        const Isa use = std::min(isa, static_cast<Isa>(level));
        TypeTraits t{};
        t.type = e.type;
        t.name = info->name;
        t.block_size = info->block_size;
        t.block_bytes = info->block_bytes;
        t.to_float_ref = e.ref;
        t.to_float = e.ref;
        t.to_float_isa = "ref";
        if (use == Isa::kAvx512 && e.fast_avx512 != nullptr) {
          t.to_float = e.fast_avx512;
          t.to_float_isa = "avx512";
        } else if (use >= Isa::kAvx2 && e.fast_avx2 != nullptr) {
          t.to_float = e.fast_avx2;
          t.to_float_isa = "avx2";
        }
        t.from_float = e.quantize;
        t.needs_imatrix = e.needs_imatrix;
        traits[level][raw] = t;
      }
      present[raw] = true;
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

}  // namespace

const TypeTraits* find_type_traits(TensorType type) {
  const auto raw = static_cast<uint32_t>(type);
  if (raw >= kMaxRawType || !registry().present[raw]) return nullptr;
  return &registry().traits[static_cast<int>(dequant_level())][raw];
}

const TypeTraits& type_traits(TensorType type) {
  const TypeTraits* t = find_type_traits(type);
  if (t == nullptr) throw InvalidArgument("tensor type " + tensor_type_name(type) + " is not supported by ferrite");
  return *t;
}

void set_dequant_cap(DequantCap cap) { g_cap.store(static_cast<int>(cap), std::memory_order_relaxed); }

DequantCap dequant_level() {
  return std::min(registry().isa, static_cast<Isa>(g_cap.load(std::memory_order_relaxed)));
}

const char* dequant_isa() {
  switch (dequant_level()) {
    case Isa::kAvx512: return "avx512";
    case Isa::kAvx2: return "avx2";
    default: return "ref";
  }
}

}  // namespace ferrite::quant
