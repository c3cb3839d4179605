#include "cpu/matmul.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/vec_ops.h"
#include "quant/type_traits.h"

namespace ferrite::cpu {
namespace {

// Rows of W dotted against a block of activation rows while they sit in L1/L2.
constexpr int64_t kRowTile = 16;
// Activation rows per block: 64 rows of 4096 f16 values are 512 KiB (L2).
constexpr int64_t kTokenTile = 64;

// The format the activations are converted to for a weight type.
enum class Operand { F32, F16, BF16, Dequant };

Operand operand_for(TensorType t) {
  switch (t) {
    case TensorType::F32:
      return Operand::F32;
    case TensorType::F16:
      return Operand::F16;
    case TensorType::BF16:
      return Operand::BF16;
    default:
      return Operand::Dequant;
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

}  // namespace

bool matmul_supports(TensorType type) {
  switch (operand_for(type)) {
    case Operand::Dequant:
      return quant::find_type_traits(type) != nullptr;
    default:
      return true;
  }
}

void matmul(const MatView& w, const float* x, int64_t m, float* y, ThreadPool& pool, MatmulScratch& scratch) {
  check(w);
  const VecOps& ops = vec_ops();
  const Operand op = operand_for(w.type);
  const int64_t k = w.k;

  // 1. Activations in the operand format: [m, k].
  const uint8_t* act = reinterpret_cast<const uint8_t*>(x);
  const size_t act_row_bytes = static_cast<size_t>(k) * operand_bytes(op);
  if (op == Operand::F16 || op == Operand::BF16) {
    scratch.act.resize(static_cast<size_t>(m) * act_row_bytes);
    auto* dst = reinterpret_cast<uint16_t*>(scratch.act.data());
    for (int64_t t = 0; t < m; ++t) {
      (op == Operand::F16 ? ops.f32_to_f16 : ops.f32_to_bf16)(x + t * k, dst + t * k, k);
    }
    act = scratch.act.data();
  }
  if (op == Operand::Dequant && static_cast<int>(scratch.rows.size()) < pool.size()) {
    scratch.rows.resize(static_cast<size_t>(pool.size()));
  }

  // 2. Rows of W split between threads; tokens in blocks.
  pool.run([&](int ith, int nth) {
    const Range rows = split_range(w.n, ith, nth);
    if (rows.begin >= rows.end) return;
    for (int64_t t0 = 0; t0 < m; t0 += kTokenTile) {
      const int64_t t1 = std::min(t0 + kTokenTile, m);
      switch (op) {
        case Operand::F32:
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return ops.dot_f32(reinterpret_cast<const float*>(wr), reinterpret_cast<const float*>(a), k);
          });
          break;
        case Operand::F16:
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return ops.dot_f16(reinterpret_cast<const uint16_t*>(wr), reinterpret_cast<const uint16_t*>(a), k);
          });
          break;
        case Operand::BF16:
          tile_loop(w, act, act_row_bytes, t0, t1, rows.begin, rows.end, y, [&](const uint8_t* wr, const uint8_t* a) {
            return ops.dot_bf16(reinterpret_cast<const uint16_t*>(wr), reinterpret_cast<const uint16_t*>(a), k);
          });
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
          }
          break;
        }
      }
    }
  });
}

void matmul_ref(const MatView& w, const float* x, int64_t m, float* y) {
  check(w);
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
      y[t * w.n + r] = static_cast<float>(sum);
    }
  }
}

}  // namespace ferrite::cpu
