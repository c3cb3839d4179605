// cpu::matmul alone for each weight type: y[m, n] = x[m, k] · W[n, k]^T with
// random weights quantized by the project's quantizers (src/quant). m = 1 is
// the decode GEMV (bound by streaming W from memory), larger m the prompt
// GEMM (bound by the arithmetic of the instruction class the product runs
// on). The weight matrix is cycled through copies larger than the last-level
// cache, as a decode step streams every layer's weights.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "cpu/features.h"
#include "cpu/matmul.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "gguf/tensor_type.h"
#include "lab.h"
#include "quant/dequantize.h"
#include "quant/type_traits.h"

namespace ferrite::kbench {

// Rows quantized from random values (the rest of the matrix repeats them:
// the quantizers of the IQ types take milliseconds per row).
constexpr int64_t kUniqueRows = 64;
constexpr float kWeightSigma = 0.02f;  // typical scale of trained weights

// Whether the lab can time products of `type`: matmul takes it and the
// project can quantize to it.
inline bool benchable(TensorType type) {
  const quant::TypeTraits* tt = quant::find_type_traits(type);
  return cpu::matmul_supports(type) && tt != nullptr && tt->from_float != nullptr;
}

// The weight types to time: the named ones, or every benchable type in enum order.
inline std::vector<TensorType> matmul_types(const std::vector<std::string>& names) {
  std::vector<TensorType> out;
  if (names.empty()) {
    for (const TensorTypeInfo* i = tensor_types_begin(); i != tensor_types_end(); ++i) {
      if (benchable(i->type)) out.push_back(i->type);
    }
    return out;
  }
  for (const std::string& s : names) {
    const auto t = tensor_type_from_name(s);
    if (!t) throw InvalidArgument("--types: unknown type '" + s + "'");
    if (!benchable(*t)) throw InvalidArgument("--types: matmul or the quantizers do not support " + s);
    out.push_back(*t);
  }
  return out;
}

// The path a product of `type` takes at the active level, and the
// instruction class it spends its arithmetic in.
inline bool dequant_path(TensorType t) {
  return tensor_type_info(t)->quantized && cpu::find_quant_dot(t, cpu::active_isa()) == nullptr;
}

inline cpu::PeakKind matmul_peak_kind(TensorType t) {
  // Types without an integer dot product are dequantized to f32 rows and dotted with f32 FMA.
  return dequant_path(t) ? cpu::PeakKind::F32Fma : cpu::peak_kind_for(t);
}

// Whether the runtime repacks weights of this shape at load (model/packed_weights.cpp's test).
inline bool float_type(TensorType t) { return t == TensorType::F16 || t == TensorType::BF16; }
inline bool repacked(const cpu::MatView& w) {
  if (!cpu::packable(w)) return false;
  if (float_type(w.type)) return cpu::find_packed_float_kernel(w.type) != nullptr;
  return cpu::find_packed_kernel(w.type, cpu::active_isa()) != nullptr;
}
// Whether a product of m tokens with repacked weights runs on AMX tiles (matmul.cpp's test).
inline bool amx_product(TensorType t, int64_t m) {
  if (m < cpu::kAmxTokens) return false;
  return float_type(t) ? cpu::find_packed_float_kernel_amx(t) != nullptr : cpu::find_packed_kernel_amx(t) != nullptr;
}
// AMX int8 throughput per core, as Intel documents it: one 16x16x64 tdpbusd
// (16384 multiply-adds) per 16 cycles. hw_limits does not measure it.
constexpr double kAmxInt8OpsPerCycle = 2.0 * 16 * 16 * 64 / 16;
// AMX bf16: one 16x16x32 tdpbf16ps per 16 cycles.
constexpr double kAmxBf16OpsPerCycle = kAmxInt8OpsPerCycle / 2;

inline std::string matmul_kernel(TensorType t) {
  const std::string kind = cpu::peak_kind_name(matmul_peak_kind(t));
  if (dequant_path(t)) return std::string("dequant-") + quant::type_traits(t).to_float_isa + " + " + kind;
  if (t == TensorType::F16) return "f16 -> " + kind;
  return kind;
}

// n rows of k elements of `type` at dst: kUniqueRows rows quantized from
// N(0, kWeightSigma) values, repeated.
inline void make_weights(TensorType type, int64_t k, int64_t n, uint8_t* dst, std::mt19937& rng) {
  const quant::TypeTraits& tt = quant::type_traits(type);
  const int64_t unique = std::min(n, kUniqueRows);
  const uint64_t row_bytes = tensor_row_bytes(type, static_cast<uint64_t>(k));
  std::vector<float> src(static_cast<size_t>(unique * k));
  fill_normal(src.data(), src.size(), rng, kWeightSigma);
  const std::vector<float> importance(static_cast<size_t>(k), 1.0f);  // uniform importance matrix
  quant::quantize_rows(type, src.data(), dst, unique, k, tt.needs_imatrix ? importance.data() : nullptr);
  for (int64_t r = unique; r < n; ++r) {
    std::memcpy(dst + static_cast<uint64_t>(r) * row_bytes, dst + static_cast<uint64_t>(r % unique) * row_bytes,
                row_bytes);
  }
}

// Rows of W to time a product of m tokens on: all n, unless the call would
// take longer than max_call_s by the estimate from the previous row of the
// type (time proportional to m x rows, which overestimates memory-bound
// rows: the error only shortens the call). Then n is halved (kept a
// multiple of kRowGroup) until the estimate fits; rows are independent, so
// the rates and the fraction of the limit stay those of the whole product,
// and the row's shape says which n was timed.
constexpr int64_t kRowGroup = 16;    // packed weights come in groups of 16 rows
constexpr int64_t kMinRows = 4 * kRowGroup;
inline int64_t rows_within(double prev_s, double prev_work, int64_t m, int64_t n, double max_call_s) {
  if (prev_s <= 0.0 || prev_work <= 0.0) return n;
  const double per_row = prev_s * static_cast<double>(m) / prev_work;
  while (n > kMinRows && per_row * static_cast<double>(n) > max_call_s && n / 2 >= kRowGroup) {
    n = std::max(kMinRows, n / 2 / kRowGroup * kRowGroup);
  }
  return n;
}

inline std::string matmul_shape(int64_t m, int64_t n, int64_t k) {
  return "m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
}

inline void run_matmul(Lab& lab) {
  const Options& o = lab.opt();
  for (TensorType type : matmul_types(o.types)) {
    const std::string name = tensor_type_name(type);
    std::vector<int64_t> ms;
    for (int64_t m : o.m) {
      if (lab.selected(m == 1 ? "gemv" : "gemm", name, matmul_shape(m, o.n, o.k))) ms.push_back(m);
    }
    if (ms.empty()) continue;
    if (o.k % tensor_type_info(type)->block_size != 0) {
      std::fprintf(stderr, "skipping %s: k = %lld is not a multiple of its block of %u\n", name.c_str(),
                   static_cast<long long>(o.k), tensor_type_info(type)->block_size);
      continue;
    }
    const uint64_t row_bytes = tensor_row_bytes(type, static_cast<uint64_t>(o.k));
    const uint64_t w_bytes = row_bytes * static_cast<uint64_t>(o.n);
    const cpu::MatView whole{.type = type, .data = nullptr, .k = o.k, .n = o.n, .row_bytes = row_bytes};
    const bool pack = o.repack && repacked(whole);
    // Repacked: the kernel reads only the packed copies; one plain copy stays for row lookups.
    Rotation weights(w_bytes, pack ? 0 : lab.cold_bytes());
    make_weights(type, o.k, o.n, weights.slot(0), lab.rng());
    weights.replicate();
    Rotation packed(pack ? w_bytes : 1, pack ? lab.cold_bytes() : 0);
    if (pack) {
      cpu::MatView plain = whole;
      plain.data = weights.slot(0);
      cpu::pack_rows(plain, packed.slot(0));
      packed.replicate();
    }
    Rotation& stream = pack ? packed : weights;  // the bytes the product reads
    cpu::MatmulScratch scratch;
    double prev_s = 0.0, prev_work = 0.0;  // the last row of this type: seconds per call, m x rows
    for (int64_t m : ms) {
      const int64_t n = rows_within(prev_s, prev_work, m, o.n, lab.opt().max_call_ms * 1e-3);
      const int64_t parts = o.n / n;  // the copies are walked in blocks of n rows
      std::vector<float> x(static_cast<size_t>(m * o.k)), y(static_cast<size_t>(m * n));  // [m, k], [m, n]
      fill_normal(x.data(), x.size(), lab.rng());
      const auto call = [&](int64_t i) {
        const uint64_t first = static_cast<uint64_t>(i / static_cast<int64_t>(stream.copies()) % parts * n);
        cpu::MatView w{.type = type,
                       .data = weights.slot(pack ? 0 : i) + first * row_bytes,
                       .k = o.k,
                       .n = n,
                       .row_bytes = row_bytes};
        if (pack) w.packed = packed.slot(i) + first * row_bytes;
        cpu::matmul(w, x.data(), m, y.data(), lab.pool(), scratch);
      };
      Row r;
      r.op = m == 1 ? "gemv" : "gemm";
      r.type = name;
      r.shape = matmul_shape(m, n, o.k);
      const bool amx = pack && amx_product(type, m);
      const char* amx_kind = float_type(type) ? "amx-bf16" : "amx-int8";
      r.kernel = !pack ? matmul_kernel(type) : amx ? std::string("packed ") + amx_kind : "packed " + matmul_kernel(type);
      r.threads = lab.pool().size();
      r.time = time_calls(call, lab.plan());
      r.bytes = static_cast<double>(row_bytes * static_cast<uint64_t>(n)) +
                static_cast<double>(kF32Bytes * (m * o.k + m * n));
      r.ops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(o.k);
      if (amx) {
        const cpu::HwLimits& h = lab.limits(r.threads);
        lab.emit(r, r.threads * h.clock_hz * (float_type(type) ? kAmxBf16OpsPerCycle : kAmxInt8OpsPerCycle), amx_kind);
      } else {
        lab.emit(r, matmul_peak_kind(type));
      }
      prev_s = r.time.median_s;
      prev_work = static_cast<double>(m * n);
    }
  }
}

}  // namespace ferrite::kbench
