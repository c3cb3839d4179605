#include "cuda/backend/linear.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "core/error.h"
#include "backend/switches.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

constexpr int64_t kChunk = 32;
// Dequantized f16 values the prefill scratch holds at most (128 MiB).
constexpr int64_t kMaxScratchElems = int64_t{1} << 26;
// Programmatic dependent launch needs sm_90.
constexpr int kPdlMinMajor = 9;

int64_t format_block(ActFormat f) { return f == ActFormat::Q8_K ? 256 : 32; }

std::atomic<bool> g_exact{backend::env_switches().cuda_exact};

}  // namespace

// 0: no programmatic dependent launches; 1: the GEMVs; 2: every decode kernel.
int pdl_level() {
  static const int level = [] {
    const int wanted = backend::env_switches().cuda_pdl;
    if (wanted == 0) return 0;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return 0;
    if (major < kPdlMinMajor) return 0;
    return wanted;
  }();
  return level;
}

bool pdl_enabled() { return pdl_level() >= 1; }
bool pdl_chain_enabled() { return pdl_level() >= 2; }

bool fused_out(TensorType t, Activation& act, ActOut& out) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: {
      // (Q4_1/Q5_1 read Q8_1 blocks, which the fused kernels do not write.)
      out.format = act_format_for(t);
      if (act.k() % format_block(out.format) != 0) return false;
      out.quant = act.quant_buffers(out.format);
      break;
    }
    case TensorType::F16:
      out.f16 = act.f16_buffer();
      break;
    default:
      return false;
  }
  return act_out_supports(out, act.k());
}

void mark_made(Activation& act, const ActOut& out) {
  if (out.f16 != nullptr) {
    act.mark_f16();
  } else {
    act.mark_quantized(out.format);
  }
}

void set_exact_products(bool exact) { g_exact = exact; }
bool exact_products() { return g_exact; }

QuantAct Activation::quant_buffers(ActFormat f) {
  const int i = static_cast<int>(f);
  if (k_ % format_block(f) != 0) {
    throw InvalidArgument("GPU linear: row length " + std::to_string(k_) + " does not fit the activation blocks");
  }
  qs_[i].reserve(static_cast<size_t>(m_ * k_));
  d_[i].reserve(static_cast<size_t>(m_ * k_ / kChunk) * sizeof(float));
  sums_[i].reserve(static_cast<size_t>(m_ * k_ / kChunk) * sizeof(int32_t));
  QuantAct q{qs_[i].as<int8_t>(), d_[i].as<float>(), sums_[i].as<int32_t>()};
  if (f == ActFormat::Q8_1) {
    s_.reserve(static_cast<size_t>(m_ * k_ / kChunk) * sizeof(float));
    q.s = s_.as<float>();
  }
  return q;
}

uint16_t* Activation::f16_buffer() {
  f16_.reserve(static_cast<size_t>(m_ * k_) * sizeof(uint16_t));
  return f16_.as<uint16_t>();
}

QuantAct Activation::quantized(ActFormat f, cudaStream_t s) {
  const int i = static_cast<int>(f);
  const QuantAct q = quant_buffers(f);
  if (!have_q_[i]) {
    quantize_act(f, x_, m_, k_, q, s);
    have_q_[i] = true;
  }
  return q;
}

const uint16_t* Activation::f16(cudaStream_t s) {
  f16_buffer();
  if (!have_f16_) {
    to_f16(x_, f16_.as<uint16_t>(), m_ * k_, s);
    have_f16_ = true;
  }
  return f16_.as<uint16_t>();
}

const uint16_t* Activation::f16_via(ActFormat f, cudaStream_t s) {
  const int i = static_cast<int>(f);
  const QuantAct q = quantized(f, s);
  via_[i].reserve(static_cast<size_t>(m_ * k_) * sizeof(uint16_t));
  if (!have_via_[i]) {
    quantized_act_to_f16(q, m_, k_, via_[i].as<uint16_t>(), s);
    have_via_[i] = true;
  }
  return via_[i].as<uint16_t>();
}

LinearRunner::LinearRunner(cudaStream_t stream) : stream_(stream), scratch_limit_(kMaxScratchElems) {
  pdl_ = pdl_enabled();
  FERRITE_CUBLAS_CHECK(cublasCreate(&handle_));
  FERRITE_CUBLAS_CHECK(cublasSetStream(handle_, stream_));
  FERRITE_CUBLAS_CHECK(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH));
}

LinearRunner::~LinearRunner() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

void LinearRunner::gemm_f16(const void* w16, int64_t n, int64_t k, const void* x16, int64_t m, float* y,
                            bool accumulate, int64_t ldy) {
  // Column-major view: Y^T [n, m] = W [n, k] (stored as W^T [k, n]) · X^T [k, m].
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  FERRITE_CUBLAS_CHECK(cublasGemmEx(handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                    static_cast<int>(k), &alpha, w16, CUDA_R_16F, static_cast<int>(k), x16,
                                    CUDA_R_16F, static_cast<int>(k), &beta, y, CUDA_R_32F,
                                    static_cast<int>(ldy > 0 ? ldy : n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void LinearRunner::run(const GpuMatrix& w, Activation& a, float* y, bool accumulate, const float* bias,
                       const RopeKvOut* rope) {
  if (a.k() != w.k) {
    throw InvalidArgument("GPU linear: input width " + std::to_string(a.k()) + " != weight row length " +
                          std::to_string(w.k));
  }
  const int64_t m = a.m();
  if (m == 0) return;
  if (bias != nullptr && accumulate) throw InvalidArgument("GPU linear: bias with accumulate is not supported");
  const bool fast = !exact_products();
  const bool gemm = m > kGemmMinRows && fast && !rows_as_steps_;
  // The GEMVs take any number of rows as one-token steps; else up to kGemmMinRows.
  const bool gemv_rows = m <= kGemmMinRows || rows_as_steps_;
  if (rope != nullptr) {
    if (accumulate || bias != nullptr || !takes_rope(w, m, *rope)) {
      throw InvalidArgument("GPU linear: the fused RoPE needs the one-token GEMV without bias or accumulation (" +
                            tensor_type_name(w.type) + ", " + std::to_string(m) + " rows)");
    }
    gemv_quant_rope(w, a.quantized(act_format_for(w.type), stream_), y, *rope, pdl_, stream_);
    return;
  }
  if (gemm && w.type == TensorType::F16) {
    gemm_f16(w.data, w.n, w.k, a.f16(stream_), m, y, accumulate);
  } else if (fast && w.type == TensorType::F16 && gemv_f16_supports(w, a.f16(stream_))) {
    gemv_f16(w, a.f16(stream_), m, y, accumulate, pdl_, stream_);
  } else if (fast && !rows_as_steps_ && m >= mma_min_rows_ && m <= mma_max_rows_ && matmul_mma_supports(w)) {
    matmul_mma(w, a.quantized(act_format_for(w.type), stream_), m, y, accumulate, mma_scratch_, stream_);
  } else if (fast && gemv_quant_supports(w, m)) {
    gemv_quant(w, a.quantized(act_format_for(w.type), stream_), m, y, accumulate, pdl_, stream_);
  } else if (fast && gemv_rows && (rows_as_steps_ || !matmul_mma_supports(w)) &&
             gemv_quant_supports(w, kGemvMaxRows)) {
    // Types the int8 mma does not take (and every type as one-token steps): the GEMV, a group of rows at a time.
    gemv_groups(w, a.quantized(act_format_for(w.type), stream_), m, y, accumulate);
  } else if (fast && gemv_rows && gemv_iq_supports(w)) {
    // IQ/TQ types: their own GEMV (gemv_iq.cu), groups of kGemvMaxRows rows.
    gemv_iq(w, a.quantized(act_format_for(w.type), stream_), m, y, accumulate, stream_);
  } else if (gemm && dequant_f16_supports(w.type)) {
    // Row blocks of at most kMaxScratchElems dequantized values (a large
    // output matrix must not need a scratch of its own size).
    const int64_t block_rows = std::max<int64_t>(1, std::min<int64_t>(w.n, scratch_limit_ / w.k));
    w16_.reserve(static_cast<size_t>(block_rows * w.k) * sizeof(uint16_t));
    const uint16_t* x16 = a.f16_via(act_format_for(w.type), stream_);
    for (int64_t r0 = 0; r0 < w.n; r0 += block_rows) {
      const int64_t rows = std::min(block_rows, w.n - r0);
      dequantize_f16(row_slice(w, r0, rows), w16_.as<uint16_t>(), stream_);
      gemm_f16(w16_.as(), rows, w.k, x16, m, y + r0, accumulate, w.n);
    }
  } else {
    run_exact(w, a, y, accumulate);
  }
  if (bias != nullptr) add_bias(y, bias, m, w.n, stream_);
}

void LinearRunner::run_exact(const GpuMatrix& w, Activation& a, float* y, bool accumulate) {
  const int64_t m = a.m();
  switch (w.type) {
    case TensorType::F32:
    case TensorType::F16: {
      const bool f16 = w.type == TensorType::F16;
      const void* x = f16 ? static_cast<const void*>(a.f16(stream_)) : static_cast<const void*>(a.x());
      matmul_float(w, x, m, y, accumulate, stream_);
      break;
    }
    default: {
      if (exact_dequantized(w.type)) {
        run_dequantized(w, a, y, accumulate);
        break;
      }
      const QuantAct q = a.quantized(act_format_for(w.type), stream_);
      matmul_quant(w, q, m, y, accumulate, stream_);
      break;
    }
  }
}

bool LinearRunner::takes_gemv(const GpuMatrix& w, int64_t m) const {
  // The branches of run() before the GEMV's.
  if (exact_products() || w.type == TensorType::F16 || w.type == TensorType::F32) return false;
  if (!rows_as_steps_ && m >= mma_min_rows_ && m <= mma_max_rows_ && matmul_mma_supports(w)) return false;
  return gemv_quant_supports(w, m);
}

void LinearRunner::gemv_groups(const GpuMatrix& w, const QuantAct& q, int64_t m, float* y, bool accumulate) {
  const int64_t per_row = w.k / kChunk;  // scales and sums per activation row
  for (int64_t r0 = 0; r0 < m; r0 += kGemvMaxRows) {
    const int64_t rows = std::min(kGemvMaxRows, m - r0);
    QuantAct part{q.qs + r0 * w.k, q.d + r0 * per_row, q.sums + r0 * per_row};
    if (q.s != nullptr) part.s = q.s + r0 * per_row;
    gemv_quant(w, part, rows, y + r0 * w.n, accumulate, pdl_ && r0 == 0, stream_);
  }
}

void LinearRunner::run_dequantized(const GpuMatrix& w, Activation& a, float* y, bool accumulate) {
  const int64_t m = a.m();
  const ActFormat f = act_format_for(w.type);
  const QuantAct q = a.quantized(f, stream_);
  x32_.reserve(static_cast<size_t>(m * w.k) * sizeof(float));
  quantized_act_to_f32(q, m, w.k, x32_.as<float>(), stream_);
  // Row blocks of at most scratch_limit_ dequantized values.
  const int64_t block_rows = std::max<int64_t>(1, std::min<int64_t>(w.n, scratch_limit_ / w.k));
  w32_.reserve(static_cast<size_t>(block_rows * w.k) * sizeof(float));
  y32_.reserve(static_cast<size_t>(block_rows * m) * sizeof(float));
  for (int64_t r0 = 0; r0 < w.n; r0 += block_rows) {
    const int64_t rows = std::min(block_rows, w.n - r0);
    const GpuMatrix part = row_slice(w, r0, rows);
    dequantize_f32(part, w32_.as<float>(), stream_);
    GpuMatrix rows_f32;
    rows_f32.type = TensorType::F32;
    rows_f32.n = rows;
    rows_f32.k = w.k;
    rows_f32.data = w32_.as<uint8_t>();
    rows_f32.row_bytes = static_cast<uint64_t>(w.k) * sizeof(float);
    // y32 [m, rows]: the dots, then into y's columns.
    matmul_float(rows_f32, x32_.as<float>(), m, y32_.as<float>(), false, stream_);
    store_columns(y32_.as<float>(), m, rows, y + r0, w.n, accumulate, stream_);
  }
}

}  // namespace ferrite::cuda
