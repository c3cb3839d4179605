#include "cpu/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/vec_ops.h"
#include "quant/blocks.h"
#include "quant/type_traits.h"

namespace ferrite::cpu {
namespace {

// Rows of W dotted against a block of activation rows while they sit in L1/L2.
constexpr int64_t kRowTile = 16;
// Activation rows per block: 64 rows of 4096 f16 values are 512 KiB (L2).
constexpr int64_t kTokenTile = 64;

// The format the activations are converted to for a weight type.
enum class Operand { F32, F16, BF16, Quant, Dequant };

Operand operand_for(TensorType t) {
  switch (t) {
    case TensorType::F32:
      return Operand::F32;
    case TensorType::F16:
      return Operand::F16;
    case TensorType::BF16:
      return Operand::BF16;
    default:
      return find_quant_dot(t, active_isa()) != nullptr ? Operand::Quant : Operand::Dequant;
  }
}

size_t operand_bytes(Operand op) { return op == Operand::F16 || op == Operand::BF16 ? 2 : 4; }

void check(const MatView& w) {
  if (!matmul_supports(w.type)) {
    throw InvalidArgument("matrix product: unsupported weight type " + tensor_type_name(w.type));
  }
}

// Dot products of W rows [r0, r1) with activation rows [t0, t1).
template <typename Dot>
void tile_loop(const MatView& w, const uint8_t* act, size_t act_row_bytes, int64_t t0, int64_t t1, int64_t r0,
               int64_t r1, float* y, Dot&& dot) {
  for (int64_t rt = r0; rt < r1; rt += kRowTile) {
    const int64_t rend = std::min(rt + kRowTile, r1);
    for (int64_t t = t0; t < t1; ++t) {
      const uint8_t* a = act + static_cast<size_t>(t) * act_row_bytes;
      float* yt = y + t * w.n;
      for (int64_t r = rt; r < rend; ++r) yt[r] = dot(w.row(r), a);
    }
  }
}

// Register-blocked version of tile_loop for the float types: tiles of up to
// kTileRows x kTileTokens outputs (VecOps::tile_*), same sums as the dots.
template <typename T, typename Tile>
void blocked_loop(const MatView& w, const T* act, int64_t k, int64_t t0, int64_t t1, int64_t r0, int64_t r1, float* y,
                  Tile tile) {
  const int64_t w_stride = static_cast<int64_t>(w.row_bytes / sizeof(T));
  for (int64_t rt = r0; rt < r1; rt += kRowTile) {
    const int64_t rend = std::min(rt + kRowTile, r1);
    for (int64_t t = t0; t < t1; t += kTileTokens) {
      const int64_t nt = std::min(kTileTokens, t1 - t);
      for (int64_t r = rt; r < rend; r += kTileRows) {
        const int64_t nr = std::min(kTileRows, rend - r);
        tile(reinterpret_cast<const T*>(w.row(r)), w_stride, nr, act + t * k, k, nt, k, y + t * w.n + r, w.n);
      }
    }
  }
}

// Q4_1/Q5_1 rows: sum over blocks of the weight offset m times the
// activation block-sum correction (see act_quant_q8_1_sum_correction).
constexpr int64_t kQ8_1Block = 32;
constexpr size_t kOffsetOfM = 2;  // BlockQ4_1/BlockQ5_1: f16 d, then f16 m

float q8_1_offset_term(const MatView& w, int64_t r, const float* corr) {
  const TensorTypeInfo* info = tensor_type_info(w.type);
  const uint8_t* row = w.row(r);
  float sum = 0.0f;
  for (int64_t b = 0; b < w.k / kQ8_1Block; ++b) {
    uint16_t m16;
    std::memcpy(&m16, row + static_cast<size_t>(b) * info->block_bytes + kOffsetOfM, sizeof(m16));
    sum += fp16_to_fp32(m16) * corr[b];
  }
  return sum;
}

// A product's work is numbered token tile major: tile i of kTokenTile tokens
// holds units [i * units, (i + 1) * units). Calls fn(t0, t1, u0, u1) for each
// tile [begin, end) touches: its tokens [t0, t1) of m and its units
// [u0, u1), counted within the tile.
template <typename F>
void each_tile_part(int64_t begin, int64_t end, int64_t units, int64_t m, F&& fn) {
  for (int64_t u = begin; u < end;) {
    const int64_t tile = u / units, u1 = std::min(end, (tile + 1) * units);
    const int64_t t0 = tile * kTokenTile;
    fn(t0, std::min(t0 + kTokenTile, m), u - tile * units, u1 - tile * units);
    u = u1;
  }
}

// The 16-row groups of a packed matrix, per token tile of kTokenTile, in
// ranges the threads take in turn, long first and down to one call at the
// end (ThreadPool::run_ranges: with 8 equal chunks per thread taken in turn a
// 2-thread 1B Q4_0 decode waited 3-4 µs per product, 1.4 µs so; the token
// times stayed within 1%: see bench/README.md, session 22);
// per group, tiles of 16 tokens to `wide` where it is set (AMX, or a kernel
// that decodes the weights once for many tokens), the rest in tiles of up to
// kPackTokens. Where `pair` is set (callers set it or `wide`, not both), two
// adjacent groups go to it per call: the ranges are counted in such pairs,
// so a group is paired the same way whichever thread takes it.
template <typename Acts, typename Kernel>
void run_packed_groups(const MatView& w, const Acts& a, int64_t m, float* y, ThreadPool& pool, Kernel kernel,
                       Kernel wide, int64_t call_tokens = kPackTokens, Kernel pair = nullptr) {
  const int64_t n_groups = w.n / kPackRows;
  const size_t group_bytes = static_cast<size_t>(kPackRows) * w.row_bytes;
  const int64_t unit = pair != nullptr ? 2 : 1;  // groups per unit of the ranges
  const int64_t units = (n_groups + unit - 1) / unit;
  const int64_t n_tiles = (m + kTokenTile - 1) / kTokenTile;
  auto run_group = [&](int64_t g, int64_t g1, int64_t t0, int64_t t1) {
    int64_t t = t0;
    if (pair != nullptr && g + 1 < g1) {
      for (; t < t1; t += call_tokens) {
        pair(w.packed + g * group_bytes, a, t, std::min(call_tokens, t1 - t), y + t * w.n + g * kPackRows, w.n);
      }
      return;
    }
    if (wide != nullptr) {
      const int64_t n_wide = (t1 - t) / kAmxTokens * kAmxTokens;
      if (n_wide > 0) wide(w.packed + g * group_bytes, a, t, n_wide, y + t * w.n + g * kPackRows, w.n);
      t += n_wide;
    }
    for (; t < t1; t += call_tokens) {
      kernel(w.packed + g * group_bytes, a, t, std::min(call_tokens, t1 - t), y + t * w.n + g * kPackRows, w.n);
    }
  };
  pool.run_ranges(n_tiles * units, 1, [&](int, int64_t begin, int64_t end) {
    each_tile_part(begin, end, units, m, [&](int64_t t0, int64_t t1, int64_t u0, int64_t u1) {
      const int64_t g1 = std::min(n_groups, u1 * unit);
      for (int64_t g = u0 * unit; g < g1; g += unit) run_group(g, g1, t0, t1);
    });
  }, m * w.n * w.k);
}

// Packed weights (packed.h) times activations quantized to Q8_0: the
// 16-row groups split between threads, tokens in AMX tiles of 16 where the
// CPU has AMX, the rest in VNNI tiles of up to kPackTokens (two groups per
// call where the level has a pair kernel).
void packed_product(const MatView& w, PackedKernel kernel, const QuantDot& qd, const float* x, int64_t m, float* y,
                    ThreadPool& pool, MatmulScratch& scratch) {
  const int64_t k = w.k;
  const int64_t nb = k / quant::kQK;
  PackedActs a;
  a.row_bytes = qd.act_row_bytes(k);
  a.n_blocks = nb;
  scratch.act.resize(static_cast<size_t>(m) * a.row_bytes);
  scratch.act_d.resize(static_cast<size_t>(m * nb));
  scratch.act_sum.resize(static_cast<size_t>(m * nb));
  const bool fused = active_isa() == Isa::Avx2;  // the quantizer gives the scales and sums
  pool.run_split(m, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* row = scratch.act.data() + t * a.row_bytes;
      if (fused) {
        quantize_q8_0_avx2(x + t * k, row, scratch.act_d.data() + t * nb, scratch.act_sum.data() + t * nb, k);
        continue;
      }
      qd.quantize(x + t * k, row, k);
      const auto* blocks = reinterpret_cast<const quant::BlockQ8_0*>(row);
      for (int64_t b = 0; b < nb; ++b) {
        int32_t sum = 0;
        for (int8_t q : blocks[b].qs) sum += q;
        scratch.act_d[static_cast<size_t>(t * nb + b)] = fp16_to_fp32(blocks[b].d);
        scratch.act_sum[static_cast<size_t>(t * nb + b)] = sum;
      }
    }
  }, m * k);
  a.q8 = scratch.act.data();
  a.d = scratch.act_d.data();
  a.sum = scratch.act_sum.data();
  if (act_quant_for(w.type) == ActQuant::Q8_1) {
    // llama.cpp's Q8_1 sum term: f16(d * sum q) with d = amax / 127 unrounded.
    scratch.corr.resize(static_cast<size_t>(m * nb));
    for (int64_t t = 0; t < m; ++t) {
      for (int64_t b = 0; b < nb; ++b) {
        float amax = 0.0f;
        for (int64_t i = 0; i < quant::kQK; ++i) amax = std::max(amax, std::fabs(x[t * k + b * quant::kQK + i]));
        const float d = amax / 127.0f;
        const auto sum = static_cast<float>(scratch.act_sum[static_cast<size_t>(t * nb + b)]);
        scratch.corr[static_cast<size_t>(t * nb + b)] = fp16_to_fp32(fp32_to_fp16(d * sum));
      }
    }
    a.s = scratch.corr.data();
  }
  const PackedKernel wide = m >= kAmxTokens ? find_packed_kernel_wide(w.type) : nullptr;
  // Two groups per call where the level has such a kernel and no AMX kernel
  // takes the tiles, decode included (as packed_float_product: lab one-token
  // product, AVX-512, 2 threads, 2048 x 4096: Q8_0 75-78% -> 96-108% of the
  // read probe, Q4_0 67-72% -> 72-96%; 1B tg64 Q8_0 32.8-35.5 -> 39.3-44.1
  // t/s, Q4_0 55.5-65.3 -> 58.7-67.4).
  const PackedKernel pair = wide == nullptr ? find_packed_pair_kernel(w.type) : nullptr;
  run_packed_groups(w, a, m, y, pool, kernel, wide, kPackTokens, pair);
}

// Packed K-quant weights (packed_k.h) times activations quantized to Q8_K:
// the kernels read each token's blocks (scale and bsums inside), AMX tiles
// of 16 tokens where the CPU has AMX and the type a kernel, the rest in VNNI
// tiles of up to kPackTokens tokens.
void packed_product_k(const MatView& w, PackedKernel kernel, const QuantDot& qd, const float* x, int64_t m, float* y,
                      ThreadPool& pool, MatmulScratch& scratch) {
  const int64_t k = w.k;
  PackedActs a;
  a.row_bytes = qd.act_row_bytes(k);
  a.n_blocks = k / quant::kQKK;
  scratch.act.resize(static_cast<size_t>(m) * a.row_bytes);
  pool.run_split(m, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) qd.quantize(x + t * k, scratch.act.data() + t * a.row_bytes, k);
  }, m * k);
  a.q8 = scratch.act.data();
  const PackedKernel wide = m >= kAmxTokens ? find_packed_kernel_wide(w.type) : nullptr;
  run_packed_groups(w, a, m, y, pool, kernel, wide);
}

// Packed F16/BF16 weights: activations rounded to the weight's 16-bit type
// once (bf16 values, or f16-rounded values kept as f32), groups split
// between threads, AMX tiles of 16 tokens for BF16 where the CPU has AMX.
void packed_float_product(const MatView& w, PackedFloatKernel kernel, const float* x, int64_t m, float* y,
                          ThreadPool& pool, MatmulScratch& scratch) {
  const VecOps& ops = vec_ops();
  const int64_t k = w.k;
  const bool bf16 = w.type == TensorType::BF16;
  PackedFloatActs a;
  a.k = k;
  if (bf16) {
    // The AVX2 kernel multiplies the bf16 values widened to f32.
    const bool wide = active_isa() == Isa::Avx2;
    scratch.act.resize(static_cast<size_t>(m * k) * (sizeof(uint16_t) + (wide ? sizeof(float) : 0)));
    auto* dst = reinterpret_cast<uint16_t*>(scratch.act.data());
    auto* widened = reinterpret_cast<float*>(dst + m * k);
    pool.run_split(m, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        ops.f32_to_bf16(x + t * k, dst + t * k, k);
        if (wide) {
          for (int64_t i = t * k; i < (t + 1) * k; ++i) widened[i] = bf16_to_fp32(dst[i]);
        }
      }
    }, m * k);
    if (wide) a.wide = widened;
  } else {
    scratch.act.resize(static_cast<size_t>(m * k) * (sizeof(float) + sizeof(uint16_t)));
    auto* rounded = reinterpret_cast<float*>(scratch.act.data());
    auto* half = reinterpret_cast<uint16_t*>(rounded + m * k);
    pool.run_split(m, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        ops.f32_to_f16(x + t * k, half + t * k, k);
        ops.f16_to_f32(half + t * k, rounded + t * k, k);
      }
    }, m * k);
  }
  a.data = scratch.act.data();
  const PackedFloatKernel amx = m >= kAmxTokens ? find_packed_float_kernel_amx(w.type) : nullptr;
  // Some kernels widen a block of weights once for all the tokens of a call.
  const int64_t call_tokens = packed_float_call_tokens();
  // Two groups per call where the level has such a kernel and no AMX kernel
  // takes the tiles; F16 in decode only (with 8 tokens two groups'
  // accumulators would fill all 32 registers). In decode two groups' streams
  // kept the memory busier than one (AVX-512, 2 threads, 2048 x 4096, lab
  // one-token product: F16 68-76% -> 105-124% of the read probe, BF16
  // 89-98% -> 100-111%; 1B tg64 F16 17.0-18.1 -> 23.1-25.0 t/s, BF16
  // 17.0-17.3 -> 22.7-26.1).
  const PackedFloatKernel pair =
      amx == nullptr && (bf16 || m == 1) ? find_packed_float_pair_kernel(w.type) : nullptr;
  run_packed_groups(w, a, m, y, pool, kernel, amx, call_tokens, pair);
}

}  // namespace

bool matmul_supports(TensorType type) {
  switch (operand_for(type)) {
    case Operand::Quant:
    case Operand::Dequant:
      return quant::find_type_traits(type) != nullptr;
    default:
      return true;
  }
}

void matmul(const MatView& w, const float* x, int64_t m, float* y, ThreadPool& pool, MatmulScratch& scratch,
            DotOrder order) {
  check(w);
  if (w.packed != nullptr && packable(w) && (w.type == TensorType::F16 || w.type == TensorType::BF16) &&
      order == DotOrder::Tiled) {
    if (const PackedFloatKernel kernel = find_packed_float_kernel(w.type)) {
      packed_float_product(w, kernel, x, m, y, pool, scratch);
      return;
    }
  }
  if (w.packed != nullptr && packable(w)) {
    // The activations in the weight type's 8-bit format, quantized as the
    // level's Q4_0 (Q8_0 format) or Q4_K (Q8_K format) products do.
    const PackedKernel kernel = find_packed_kernel(w.type, active_isa());
    const ActQuant aq = act_quant_for(w.type);
    // (Q8_1: Q8_0's values plus each block's sum term, packed_product's s.)
    const QuantDot* qd = aq == ActQuant::Q8_0 || aq == ActQuant::Q8_1 ? find_quant_dot(TensorType::Q4_0, active_isa())
                         : aq == ActQuant::Q8_K                       ? find_quant_dot(TensorType::Q4_K, active_isa())
                                                                      : nullptr;
    if (kernel != nullptr && qd != nullptr && qd->act == ActQuant::Q8_0) {
      packed_product(w, kernel, *qd, x, m, y, pool, scratch);
      return;
    }
    if (kernel != nullptr && qd != nullptr && qd->act == ActQuant::Q8_K) {
      packed_product_k(w, kernel, *qd, x, m, y, pool, scratch);
      return;
    }
  }
  const VecOps& ops = vec_ops();
  const auto dot_f32 = order == DotOrder::Tiled ? ops.dot_f32 : ops.dot_f32_unrolled;
  const auto dot_f16 = order == DotOrder::Tiled ? ops.dot_f16 : ops.dot_f16_unrolled;
  const Operand op = operand_for(w.type);
  const int64_t k = w.k;

  // 1. Activations in the operand format: [m, k].
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  size_t act_row_bytes = static_cast<size_t>(k) * operand_bytes(op);
  const QuantDot* qd = op == Operand::Quant ? find_quant_dot(w.type, active_isa()) : nullptr;
  if (qd != nullptr) {
    if (k % act_quant_block(qd->act) != 0) {
      throw InvalidArgument("matrix product: row length " + std::to_string(k) + " is not a multiple of " +
                            std::to_string(act_quant_block(qd->act)));
    }
    act_row_bytes = qd->act_row_bytes(k);
    scratch.act.resize(static_cast<size_t>(m) * act_row_bytes);
    for (int64_t t = 0; t < m; ++t) qd->quantize(x + t * k, scratch.act.data() + t * act_row_bytes, k);
    act = scratch.act.data();
  }
  if (op == Operand::F16 || op == Operand::BF16) {
    scratch.act.resize(static_cast<size_t>(m) * act_row_bytes);
    auto* dst = reinterpret_cast<uint16_t*>(scratch.act.data());
    for (int64_t t = 0; t < m; ++t) {
      (op == Operand::F16 ? ops.f32_to_f16 : ops.f32_to_bf16)(x + t * k, dst + t * k, k);
    }
    act = scratch.act.data();
  }
  if (op == Operand::Dequant) {
    // Activations through the 8-bit format llama.cpp multiplies this type with.
    const ActQuant aq = act_quant_for(w.type);
    if (k % act_quant_block(aq) != 0) {
      throw InvalidArgument("matrix product: row length " + std::to_string(k) + " is not a multiple of " +
                            std::to_string(act_quant_block(aq)));
    }
    scratch.act.resize(static_cast<size_t>(m * k) * sizeof(float));
    float* xq = reinterpret_cast<float*>(scratch.act.data());
    for (int64_t t = 0; t < m; ++t) act_quant_round_trip(aq, x + t * k, xq + t * k, k);
    if (aq == ActQuant::Q8_1) {
      scratch.corr.resize(static_cast<size_t>(m * k / kQ8_1Block));
      for (int64_t t = 0; t < m; ++t) {
        act_quant_q8_1_sum_correction(x + t * k, xq + t * k, scratch.corr.data() + t * k / kQ8_1Block, k);
      }
    }
    x = xq;
    if (static_cast<int>(scratch.rows.size()) < pool.size()) scratch.rows.resize(static_cast<size_t>(pool.size()));
  }

  // 2. Rows of W in ranges of kRowTile-row units per token tile, taken by
  // the threads in turn, long first (ThreadPool::run_ranges).
  const int64_t units = (w.n + kRowTile - 1) / kRowTile;
  const int64_t n_tiles = (m + kTokenTile - 1) / kTokenTile;
  pool.run_ranges(n_tiles * units, 1, [&](int ith, int64_t begin, int64_t end) {
    each_tile_part(begin, end, units, m, [&](int64_t t0, int64_t t1, int64_t u0, int64_t u1) {
      const Range rows{u0 * kRowTile, std::min(w.n, u1 * kRowTile)};
      switch (op) {
        case Operand::F32:
          if (order == DotOrder::Tiled) {
            blocked_loop(w, reinterpret_cast<const float*>(act), k, t0, t1, rows.begin, rows.end, y, ops.tile_f32);
            break;
          }
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return dot_f32(reinterpret_cast<const float*>(wr), reinterpret_cast<const float*>(a), k);
          });
          break;
        case Operand::F16:
          if (order == DotOrder::Tiled) {
            blocked_loop(w, reinterpret_cast<const uint16_t*>(act), k, t0, t1, rows.begin, rows.end, y, ops.tile_f16);
            break;
          }
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return dot_f16(reinterpret_cast<const uint16_t*>(wr), reinterpret_cast<const uint16_t*>(a), k);
          });
          break;
        case Operand::BF16:
          if (order == DotOrder::Tiled) {
            blocked_loop(w, reinterpret_cast<const uint16_t*>(act), k, t0, t1, rows.begin, rows.end, y, ops.tile_bf16);
            break;
          }
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return ops.dot_bf16(reinterpret_cast<const uint16_t*>(wr), reinterpret_cast<const uint16_t*>(a), k);
          });
          break;
        case Operand::Quant:
          if (qd->tile != nullptr) {
            for (int64_t rt = rows.begin; rt < rows.end; rt += kRowTile) {
              const int64_t rend = std::min(rt + kRowTile, rows.end);
              for (int64_t t = t0; t < t1; t += qd->tile_tokens) {
                const int64_t nt = std::min(qd->tile_tokens, t1 - t);
                for (int64_t r = rt; r < rend; r += kTileRows) {
                  qd->tile(w.row(r), w.row_bytes, std::min(kTileRows, rend - r), act + t * act_row_bytes,
                           act_row_bytes, nt, k, y + t * w.n + r, w.n);
                }
              }
            }
            break;
          }
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y,
                    [&](const uint8_t* wr, const uint8_t* a) { return qd->dot(wr, a, k); });
          break;
        case Operand::Dequant: {
          const quant::TypeTraits& tt = quant::type_traits(w.type);
          std::vector<float>& buf = scratch.rows[static_cast<size_t>(ith)];
          buf.resize(static_cast<size_t>(kRowTile * k));
          for (int64_t rt = rows.begin; rt < rows.end; rt += kRowTile) {
            const int64_t rend = std::min(rt + kRowTile, rows.end);
            for (int64_t r = rt; r < rend; ++r) tt.to_float(w.row(r), buf.data() + (r - rt) * k, k);
            for (int64_t t = t0; t < t1; ++t) {
              for (int64_t r = rt; r < rend; ++r) y[t * w.n + r] = ops.dot_f32(buf.data() + (r - rt) * k, x + t * k, k);
            }
            if (act_quant_for(w.type) == ActQuant::Q8_1) {
              for (int64_t t = t0; t < t1; ++t) {
                for (int64_t r = rt; r < rend; ++r) {
                  y[t * w.n + r] += q8_1_offset_term(w, r, scratch.corr.data() + t * k / kQ8_1Block);
                }
              }
            }
          }
          break;
        }
      }
    });
  }, m * w.n * k);
}

void matmul_ref(const MatView& w, const float* x, int64_t m, float* y) {
  check(w);
  std::vector<float> xq(x, x + m * w.k);
  if (act_quant_for(w.type) != ActQuant::None) {
    for (int64_t t = 0; t < m; ++t) act_quant_round_trip(act_quant_for(w.type), x + t * w.k, xq.data() + t * w.k, w.k);
  }
  std::vector<float> corr;
  if (act_quant_for(w.type) == ActQuant::Q8_1) {
    corr.resize(static_cast<size_t>(m * w.k / kQ8_1Block));
    for (int64_t t = 0; t < m; ++t) {
      act_quant_q8_1_sum_correction(x + t * w.k, xq.data() + t * w.k, corr.data() + t * w.k / kQ8_1Block, w.k);
    }
  }
  x = xq.data();
  std::vector<float> row(static_cast<size_t>(w.k));
  for (int64_t r = 0; r < w.n; ++r) {
    const uint8_t* src = w.row(r);
    switch (w.type) {
      case TensorType::F32:
        std::copy_n(reinterpret_cast<const float*>(src), w.k, row.data());
        break;
      case TensorType::F16:
        for (int64_t i = 0; i < w.k; ++i) row[i] = fp16_to_fp32(reinterpret_cast<const uint16_t*>(src)[i]);
        break;
      case TensorType::BF16:
        for (int64_t i = 0; i < w.k; ++i) row[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(src)[i]);
        break;
      default:
        quant::type_traits(w.type).to_float_ref(src, row.data(), w.k);
        break;
    }
    for (int64_t t = 0; t < m; ++t) {
      double sum = 0.0;
      for (int64_t i = 0; i < w.k; ++i) sum += static_cast<double>(row[i]) * x[t * w.k + i];
      if (!corr.empty()) sum += q8_1_offset_term(w, r, corr.data() + t * w.k / kQ8_1Block);
      y[t * w.n + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace ferrite::cpu
