// The CUDA backend's LoRA terms (backend/lora.h): after a weight product,
// y += s * B (A x) for each active adapter of the weight: A x and B (A x) by
// the LinearRunner's products of the adapter's matrices (uploaded at first
// use like the model's), then lora_scale_add (kernels/lora.cu, twin of
// cpu::lora_scale_add) with the step's per-token scales. The CPU backend's
// twin of this file: cpu/backend/cpu_lora.cpp.
#include <string>
#include <vector>

#include "backend/lora.h"
#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/lora.h"

namespace ferrite::cuda {

void CudaBackend::stage_lora(const backend::ForwardBatch& batch) {
  const backend::LoraStep* lora = batch.lora;
  if (lora == nullptr) return;
  const int64_t na = lora->n_adapters, n = batch.n_tokens, n_out = batch.n_out;
  const size_t tok_bytes = static_cast<size_t>(na * n) * sizeof(float);
  const size_t out_bytes = static_cast<size_t>(na * n_out) * sizeof(float);
  lora_scales_.reserve(tok_bytes + out_bytes + sizeof(float));
  float* dev = lora_scales_.as<float>();
  // Pageable host memory: the copy has read it when cudaMemcpyAsync returns;
  // the runtime's scales live until the step ends anyway.
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(dev, lora->token_scales, tok_bytes, cudaMemcpyHostToDevice, stream_));
  if (out_bytes > 0) {
    FERRITE_CUDA_CHECK(
        cudaMemcpyAsync(dev + na * n, lora->out_scales, out_bytes, cudaMemcpyHostToDevice, stream_));
  }
}

void CudaBackend::lora_add(const backend::Weight& w, Activation& a, float* y) {
  if (!lora_on()) return;
  const backend::LoraStep& lora = *batch_->lora;
  const int64_t m = a.m(), n = batch_->n_tokens, n_out = batch_->n_out, na = lora.n_adapters;
  for (const backend::LoraTerm& term : lora.terms(w)) {
    const float* dev = lora_scales_.as<float>();
    const float* user = m == n ? dev + term.adapter * n : m == n_out ? dev + na * n + term.adapter * n_out : nullptr;
    if (user == nullptr) {
      throw InvalidArgument("LoRA: a product of " + std::to_string(m) + " rows in a step of " + std::to_string(n) +
                            " tokens");
    }
    const backend::LoraWeight& lw = *term.w;
    const GpuMatrix& ma = weights_.matrix(lw.a);
    const GpuMatrix& mb = weights_.matrix(lw.b);
    float* t = scratch(kLoraT, m * ma.n);
    float* u = scratch(kLoraU, m * mb.n);
    lin_->run(ma, a, t);
    act_lora_.set(t, m, ma.n);
    lin_->run(mb, act_lora_, u);
    lora_scale_add(y, u, m, mb.n, user, lw.alpha, lw.rank(), stream_);
  }
}

}  // namespace ferrite::cuda
