// The CPU backend's LoRA terms (backend/lora.h): after a weight product,
// y += s * B (A x) for each active adapter of the weight, in llama.cpp's
// order (the product, then each adapter's scaled term, then the bias).
#include "backend/lora.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/ops/lora.h"

namespace ferrite::cpu {

void CpuBackend::lora_add(const backend::Weight& w, const float* x, int64_t n, float* y) {
  const backend::LoraStep* lora = batch_ != nullptr ? batch_->lora : nullptr;
  if (lora == nullptr) return;
  for (const backend::LoraTerm& term : lora->terms(w)) {
    const float* user = lora->scales(term.adapter, n, batch_->n_tokens, batch_->n_out);
    if (user == nullptr) {
      throw InvalidArgument("LoRA: a product of " + std::to_string(n) + " rows in a step of " +
                            std::to_string(batch_->n_tokens) + " tokens");
    }
    const backend::LoraWeight& lw = *term.w;
    const int64_t r = lw.rank(), n_out = lw.b.rows();
    float* t = grow(ws_.lora_t, n * r);
    float* u = grow(ws_.lora_u, n * n_out);
    matmul(mat_view(lw.a), x, n, t, pool_, ws_.matmul);
    matmul(mat_view(lw.b), t, n, u, pool_, ws_.matmul);
    lora_scale_add(y, u, n, n_out, user, lw.alpha, r);
  }
}

}  // namespace ferrite::cpu
