// The CPU backend: the operations of backend/ops.h on host memory with the
// CPU kernels (src/cpu and its subfolders) and a thread pool. Operations run as they are issued;
// the results are in their buffers when an operation returns. Its arithmetic
// is the reference the model goldens (tests/model) hold bit for bit.
//
// Files: cpu_backend.cpp (buffers, embeddings, norms, products, element-wise
// ops, transfers), cpu_attention.cpp (self-attention over the KV cache, the
// encoders' attention), cpu_mla.cpp (multi-head latent attention), cpu_ssm.cpp (the Mamba-2 mixer), cpu_ffn.cpp (the feed-forward variants, experts),
// cpu_lora.cpp (the LoRA terms every product adds, backend/lora.h).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "cpu/backend/workspace.h"
#include "cpu/matmul.h"
#include "cpu/thread_pool.h"

namespace ferrite::cpu {

// A weight as a matrix of rows() rows of cols() elements (a 1-D weight is one
// row), and expert e of a 3-D weight [k, n, n_expert] as a matrix [n, k].
MatView mat_view(const backend::Weight& w);
MatView expert_view(const backend::Weight& w, int64_t e);

class CpuBackend final : public backend::Backend {
 public:
  // The pool and the workspace are the caller's (a context's), and outlive it.
  CpuBackend(const backend::ModelDims& dims, ThreadPool& pool, Workspace& ws);

  const char* name() const override { return "CPU"; }
  void begin_step(const backend::ForwardBatch& batch, const backend::KvView& kv) override;
  bool end_step() override { return true; }

  backend::Act buffer(backend::Buf b, int64_t rows, int64_t cols) override;
  backend::Act output(backend::Buf b, float* host, int64_t rows, int64_t cols) override;
  int prepare_rope(const backend::RopeConfig& c) override;
  void embed(const backend::Weight& table, backend::Ids ids, backend::Act out) override;
  void add(backend::Act x, backend::Act y) override;
  void scale(backend::Act x, float c) override;
  void softcap(backend::Act x, float cap) override;
  void norm(backend::NormKind kind, backend::Act x, const backend::Norm& n, backend::Act out,
            const backend::Weight* feeds) override;
  void linear(const backend::Weight& w, const backend::Weight& bias, backend::Act in, backend::Act out,
              bool accumulate) override;
  void attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void mla_attention(const backend::MlaSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void feed_forward(const backend::FfnSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void moe(const backend::MoeWeights& w, backend::Act h, backend::Act out, bool accumulate) override;
  void encoder_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) override;
  void cross_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) override;
  void ssm(const backend::SsmSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void rwkv_time_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out, backend::Act v_first,
                     bool accumulate) override;
  void rwkv_channel_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void gather_rows(backend::Act x, backend::Act out) override;
  const float* host_data(backend::Act a) override { return a.data; }
  void to_host(backend::Act a, float* host) override;
  void from_host(const float* host, backend::Act a) override;

 private:
  // y [n, w.rows()] = x [n, w.cols()] · W^T (+ bias).
  void product(const backend::Weight& w, const backend::Weight& bias, const float* x, int64_t n, float* y);
  // y += the step's LoRA terms of w for x [n, w.cols()] (cpu_lora.cpp); nothing without adapters.
  void lora_add(const backend::Weight& w, const float* x, int64_t n, float* y);
  // Where an operation writes its result: out itself, or (accumulate) scratch
  // added to out by finish().
  float* target(backend::Act out, bool accumulate);
  void finish(backend::Act out, bool accumulate);
  // The batch's keys and values [n, n_embd_kv] into the layer's cache cells.
  void store_kv(int64_t layer, const float* k, const float* v, const backend::KvView* view = nullptr);
  // The layer's cache into the attention kernel's arguments: f16 (quantized
  // rows read back as f16), or, when K or V is f32 / bf16, a cache of rows
  // (cpu/attention/attention_rows.h; the other half as f16 rows).
  void bind_cache(int64_t layer, AttentionArgs& a, const backend::KvView* view = nullptr);
  // out = down(act(gate h) * up h) (+ biases), or down(act(up h)) without gate; act SiLU or f16-table GELU.
  void ffn_gated(const backend::FfnWeights& w, bool gelu, const float* h, int64_t n, float* out);

  // cpu_rwkv.cpp: the layer's recurrent state (InvalidArgument without one).
  const backend::RecurrentLayer& rwkv_state(const backend::RwkvSpec& spec) const;
  void rwkv6_time_mix(const backend::RwkvSpec& spec, const float* h, const float* sx, float* y);
  void rwkv7_time_mix(const backend::RwkvSpec& spec, const float* h, const float* sx, float* v_first, float* y);

  backend::ModelDims dims_;
  ThreadPool& pool_;
  Workspace& ws_;
  const backend::ForwardBatch* batch_ = nullptr;
  const backend::KvView* kv_ = nullptr;
  std::vector<backend::RopeConfig> ropes_;  // this step's tables, by id
  std::vector<float> rel_table_;            // T5's bias per head and distance (cpu/attention/rel_pos_bias.h)
};

}  // namespace ferrite::cpu
