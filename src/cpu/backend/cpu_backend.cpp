#include "cpu/backend/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "cpu/ops/tanh_f32.h"
#include "cpu/vec_ops.h"
#include "quant/type_traits.h"

namespace ferrite::cpu {
namespace {

void add_rows(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

}  // namespace

MatView mat_view(const backend::Weight& w) {
  const gguf::TensorInfo* t = w.info;
  return MatView{t->type, t->data, t->ne[0], t->ne[1] * t->ne[2] * t->ne[3], t->row_bytes(), w.packed};
}

MatView expert_view(const backend::Weight& w, int64_t e) {
  return mat_view(w).rows(e * w.ne(1), w.ne(1));
}

CpuBackend::CpuBackend(const backend::ModelDims& dims, ThreadPool& pool, Workspace& ws)
    : dims_(dims), pool_(pool), ws_(ws) {}

void CpuBackend::begin_step(const backend::ForwardBatch& batch, const backend::KvView& kv) {
  batch_ = &batch;
  kv_ = &kv;
  ropes_.clear();
}

backend::Act CpuBackend::buffer(backend::Buf b, int64_t rows, int64_t cols) {
  return {grow(ws_.bufs[static_cast<int>(b)], rows * cols), rows, cols, b};
}

backend::Act CpuBackend::output(backend::Buf b, float* host, int64_t rows, int64_t cols) {
  return {host, rows, cols, b};
}

int CpuBackend::prepare_rope(const backend::RopeConfig& c) {
  const size_t id = ropes_.size();
  ropes_.push_back(c);
  if (ws_.rope_cos.size() <= id) {
    ws_.rope_cos.resize(id + 1);
    ws_.rope_sin.resize(id + 1);
  }
  const int64_t half = c.n_rot / 2;
  float* cos_t = grow(ws_.rope_cos[id], batch_->n_tokens * half);
  float* sin_t = grow(ws_.rope_sin[id], batch_->n_tokens * half);
  rope_table(c, batch_->pos, batch_->n_tokens, cos_t, sin_t);
  return static_cast<int>(id);
}

void CpuBackend::embed(const backend::Weight& table_w, backend::Ids ids, backend::Act out) {
  const int64_t n_embd = table_w.ne(0);
  const int64_t n_rows = table_w.ne(1);
  const MatView table = mat_view(table_w);
  const VecOps& ops = vec_ops();
  for (int64_t t = 0; t < out.rows; ++t) {
    const int32_t id = ids == backend::Ids::Tokens      ? batch_->tokens[t]
                       : ids == backend::Ids::Positions ? batch_->pos[t]
                       : batch_->types != nullptr       ? batch_->types[t]
                                                        : 0;
    if (id < 0 || id >= n_rows) {
      const std::string what = ids == backend::Ids::Tokens      ? "token id "
                               : ids == backend::Ids::Positions ? "position "
                                                                : "token type ";
      throw InvalidArgument(what + std::to_string(id) + " is outside the embedding table's rows (0.." +
                            std::to_string(n_rows - 1) + ")");
    }
    const uint8_t* row = table.row(id);
    float* dst = out.data + t * n_embd;
    switch (table.type) {
      case TensorType::F32:
        std::copy_n(reinterpret_cast<const float*>(row), n_embd, dst);
        break;
      case TensorType::F16:
        ops.f16_to_f32(reinterpret_cast<const uint16_t*>(row), dst, n_embd);
        break;
      case TensorType::BF16:
        for (int64_t i = 0; i < n_embd; ++i) dst[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(row)[i]);
        break;
      default:
        quant::type_traits(table.type).to_float(row, dst, n_embd);
        break;
    }
  }
}

void CpuBackend::add(backend::Act x, backend::Act y) {
  const int64_t cols = x.cols;
  pool_.run_split(x.rows, [&](int64_t r0, int64_t r1) {
    add_rows(x.data + r0 * cols, y.data + r0 * cols, (r1 - r0) * cols);
  }, x.size());
}

void CpuBackend::scale(backend::Act x, float c) {
  for (int64_t i = 0; i < x.size(); ++i) x.data[i] *= c;
}

void CpuBackend::softcap(backend::Act x, float cap) {
  softcap_f32(x.data, x.size(), cap);  // as llama.cpp: scale by 1/cap, tanh, scale by cap
}

void CpuBackend::norm(backend::NormKind kind, backend::Act x, const backend::Norm& n, backend::Act out,
                      const backend::Weight* /*feeds*/) {
  const int64_t cols = x.cols;
  const float* w = n.w ? n.w.f32() : nullptr;  // absent: non-parametric (olmo)
  // Rows split between the threads where there are enough (prompts).
  pool_.run_split(x.rows, [&](int64_t r0, int64_t r1) {
    const float* in = x.data + r0 * cols;
    float* o = out.data + r0 * cols;
    if (kind == backend::NormKind::Rms) {
      rms_norm(in, w, dims_.norm_rms_eps, r1 - r0, cols, o);
      if (n.b) {
        for (int64_t r = 0; r < r1 - r0; ++r) add_rows(o + r * cols, n.b.f32(), cols);
      }
    } else {
      layer_norm(in, w, n.b ? n.b.f32() : nullptr, dims_.norm_eps, r1 - r0, cols, o);
    }
  }, x.size());
}

void CpuBackend::product(const backend::Weight& w, const backend::Weight& bias, const float* x, int64_t n,
                         float* y) {
  const MatView m = mat_view(w);
  if (ws_.observer != nullptr) ws_.observer->on_matmul(*w.info, -1, x, n, m.k);
  matmul(m, x, n, y, pool_, ws_.matmul);
  lora_add(w, x, n, y);
  if (bias) {
    const float* b = bias.f32();
    for (int64_t t = 0; t < n; ++t) add_rows(y + t * m.n, b, m.n);
  }
}

float* CpuBackend::target(backend::Act out, bool accumulate) {
  return accumulate ? grow(ws_.block_out, out.size()) : out.data;
}

void CpuBackend::finish(backend::Act out, bool accumulate) {
  if (accumulate) add(out, backend::Act{.data = ws_.block_out.data(), .rows = out.rows, .cols = out.cols});
}

void CpuBackend::linear(const backend::Weight& w, const backend::Weight& bias, backend::Act in, backend::Act out,
                        bool accumulate) {
  product(w, bias, in.data, in.rows, target(out, accumulate));
  finish(out, accumulate);
}

void CpuBackend::gather_rows(backend::Act x, backend::Act out) {
  for (int64_t i = 0; i < batch_->n_out; ++i) {
    std::copy_n(x.data + batch_->out_rows[i] * x.cols, x.cols, out.data + i * x.cols);
  }
}

void CpuBackend::to_host(backend::Act a, float* host) { std::copy_n(a.data, a.size(), host); }

void CpuBackend::from_host(const float* host, backend::Act a) {
  if (host != a.data) std::copy_n(host, a.size(), a.data);
}

}  // namespace ferrite::cpu
