// The plain reference of the packed products: the formula of packed_matmul.h
// read straight off the layout of packed.h, one value at a time.
#include "cpu/packed/packed_matmul.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/fp16.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_k.h"
#include "cpu/packed/packed_legacy.h"
#include "quant/blocks.h"

namespace ferrite::cpu {
namespace {

using quant::kQK;

constexpr int64_t kScaleBytes = kPackRows * 2;  // 16 f16 scales open each group block
constexpr int64_t kLaneBytes = 4;

template <TensorType kType>
void packed_ref(const uint8_t* group, const PackedActs& a, int64_t t0, int64_t nt, float* y, int64_t ys) {
  constexpr bool kQ4 = kType == TensorType::Q4_0;
  constexpr int64_t kQsBytes = kQ4 ? kQK / 2 : kQK;
  constexpr int32_t kOffset = kQ4 ? 8 : 128;
  constexpr int64_t kGroupBlock = kScaleBytes + kPackRows * kQsBytes;
  for (int64_t t = 0; t < nt; ++t) {
    const int64_t tok = t0 + t;
    for (int64_t r = 0; r < kPackRows; ++r) {
      float acc = 0.0f;
      for (int64_t b = 0; b < a.n_blocks; ++b) {
        const uint8_t* gb = group + b * kGroupBlock;
        const auto* ab = reinterpret_cast<const quant::BlockQ8_0*>(a.q8 + tok * a.row_bytes) + b;
        int32_t s = -kOffset * a.sum[tok * a.n_blocks + b];
        for (int64_t j = 0; j < kQsBytes / kLaneBytes; ++j) {
          const uint8_t* lane = gb + kScaleBytes + (j * kPackRows + r) * kLaneBytes;
          for (int64_t i = 0; i < kLaneBytes; ++i) {
            const int64_t e = j * kLaneBytes + i;  // element index of the low nibble / of the value
            if constexpr (kQ4) {
              s += (lane[i] & 0x0F) * ab->qs[e] + (lane[i] >> 4) * ab->qs[e + kQK / 2];
            } else {
              s += lane[i] * ab->qs[e];
            }
          }
        }
        uint16_t dw;
        std::memcpy(&dw, gb + r * 2, sizeof(dw));
        acc = std::fma(static_cast<float>(s), fp16_to_fp32(dw) * a.d[tok * a.n_blocks + b], acc);
      }
      y[t * ys + r] = acc;
    }
  }
}

}  // namespace

PackedKernel packed_kernel_ref(TensorType type) {
  switch (type) {
    case TensorType::Q4_0:
      return packed_ref<TensorType::Q4_0>;
    case TensorType::Q8_0:
      return packed_ref<TensorType::Q8_0>;
    case TensorType::Q4_K:
      return packed_q4_k_ref;
    case TensorType::Q5_K:
      return packed_q5_k_ref;
    case TensorType::IQ4_XS:
      return packed_iq4_xs_ref;
    case TensorType::IQ2_XXS:
      return packed_iq2_xxs_ref;
    case TensorType::Q6_K:
      return packed_q6_k_ref;
    default:
      return packed_legacy_ref(type);  // Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4, else nullptr
  }
}

namespace {
// configure_packed_kernels' choices (on until told otherwise).
std::atomic<bool> g_amx_allowed{true};
std::atomic<bool> g_q6k_packed{true};
}  // namespace

void configure_packed_kernels(bool amx, bool q6k) {
  g_amx_allowed = amx;
  g_q6k_packed = q6k;
}

bool amx_available() {
  return cpu_features().amx && g_amx_allowed.load() && amx_allowed();
}

PackedKernel find_packed_kernel_amx(TensorType type) {
  return active_isa() >= Isa::Avx512 && amx_available() ? packed_kernel_amx_impl(type) : nullptr;
}

PackedKernel find_packed_kernel_wide(TensorType type) {
  if (PackedKernel amx = find_packed_kernel_amx(type)) return amx;
  if (type == TensorType::IQ2_XXS && active_isa() == Isa::Avx2) {
    return packed_iq2_xxs_wide_avx2;
  }
  return nullptr;
}

PackedKernel find_packed_pair_kernel(TensorType type) {
  return active_isa() >= Isa::Avx512 ? packed_pair_kernel_avx512(type) : nullptr;
}

PackedKernel find_packed_kernel(TensorType type, Isa isa) {
  // Neon sorts below Avx2: `isa >= Isa::Avx2` is false for it.
  if (type == TensorType::Q4_K) {
    return isa >= Isa::Avx512 ? packed_q4_k_avx512 : isa >= Isa::Avx2 ? packed_q4_k_avx2 : nullptr;
  }
  // Q5_K at AVX-512: the packed VNNI kernel (Q4_K's plus the fifth bits).
  // Before it, AVX-512 kept Q5_K's plain rows, which decode faster than the
  // packed AVX2 kernel. Device Xeon, 1B Q5_K_M, 2 threads, 4 interleaved
  // runs each (bench/README.md, session 13): pp512 77-86 t/s plain rows,
  // 108-137 packed AVX-512; tg128 17.8-24.0 and 20.4-27.8.
  if (type == TensorType::Q5_K) {
    return isa >= Isa::Avx512 ? packed_q5_k_avx512 : isa >= Isa::Avx2 ? packed_q5_k_avx2 : nullptr;
  }
  // IQ4_XS at AVX-512: the packed VNNI kernel (vpshufb lookups of the values
  // plus 128). Before it, AVX-512 hosts took the packed AVX2 kernel (which
  // beat the plain AVX-512 rows). Same runs, 1B IQ4_XS: pp512 62-79 t/s
  // packed AVX2, 120-183 packed AVX-512; tg128 20.0-23.0 and 27.7-32.2.
  if (type == TensorType::IQ4_XS) {
    return isa >= Isa::Avx512 ? packed_iq4_xs_avx512 : isa >= Isa::Avx2 ? packed_iq4_xs_avx2 : nullptr;
  }
  // IQ2_XXS: packed from AVX2 up. Before the AVX-512 kernel (a pair of rows
  // per vector, the signs a mask register), AVX-512 took the AVX2 kernels,
  // which had beaten the plain-row AVX-512 kernel (one vpgatherdq per 64
  // values; session 18). Zen 5, 1B IQ2_XXS, 2 threads, interleaved: tg64
  // 35.3-36.1 -> 50.5-51.2 t/s (3 rounds), pp512 101.9-108.9 -> 145.7-148.4
  // (2 rounds; its eight tokens per call beat the AVX2 many-token kernel,
  // which find_packed_kernel_wide now keeps to AVX2). A vpgatherqq in place
  // of its eight scalar loads halved its speed.
  if (type == TensorType::IQ2_XXS) {
    return isa >= Isa::Avx512 ? packed_iq2_xxs_avx512 : isa >= Isa::Avx2 ? packed_iq2_xxs_avx2 : nullptr;
  }
  if (packed_legacy_type(type)) return isa == Isa::Avx2 ? packed_legacy_avx2(type) : nullptr;
  if (type == TensorType::Q6_K) {
    // On unless configured off (FERRITE_REPACK_Q6K=0: plain rows and the row-tile kernel).
    // Dev machine (Zen 5, 2 threads), once the packed kernel prefetched every
    // line of its super-blocks: 4096x4096 GEMV 308 vs 390 us, m=512 22 vs 37 ms;
    // llama-1b Q4_K_M tg128 67 vs 59 t/s, pp512 378 vs 353 t/s.
    if (!g_q6k_packed.load()) return nullptr;
    return isa >= Isa::Avx512 ? packed_q6_k_avx512 : isa >= Isa::Avx2 ? packed_q6_k_avx2 : nullptr;
  }
  if (isa >= Isa::Avx512) return packed_kernel_avx512(type);
  return isa >= Isa::Avx2 ? packed_kernel_avx2(type) : nullptr;
}

}  // namespace ferrite::cpu
