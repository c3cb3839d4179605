#include "cuda/cpu_front.h"

#include "core/error.h"
#include "cpu/norm.h"
#include "model/workspace.h"

namespace ferrite::cuda {

CpuFront::CpuFront(const model::Model& m, int64_t n_cpu_layers)
    : hp_(m.hparams()), decoder_(dynamic_cast<const model::Decoder*>(&m.arch())), n_layers_(n_cpu_layers) {
  if (decoder_ == nullptr) {
    throw InvalidArgument("GPU offload: partial offload needs a pre-norm decoder model ('" + hp_.arch + "' is not)");
  }
  if (n_cpu_layers < 0 || n_cpu_layers > hp_.n_layer) {
    throw InvalidArgument("GPU offload: " + std::to_string(n_cpu_layers) + " CPU layers of " +
                          std::to_string(hp_.n_layer));
  }
}

const float* CpuFront::run(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                           model::Workspace& ws) const {
  model::Step s{hp_, batch, kv, pool, ws};
  const int64_t n = batch.n_tokens, n_embd = hp_.n_embd;
  float* x = model::grow(ws.x, n * n_embd);  // [n, n_embd]
  float* h = model::grow(ws.h, n * n_embd);
  float* y = model::grow(ws.block_out, n * n_embd);
  model::embed_tokens(s, decoder_->tok_embd(), x);
  const model::Tensor& rope_freqs = decoder_->rope_freqs();
  model::prepare_rope(s, rope_freqs ? rope_freqs.f32() : nullptr);
  for (int64_t il = 0; il < n_layers_; ++il) {
    const model::Decoder::Layer& L = decoder_->layer(il);
    cpu::rms_norm(x, L.attn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    model::self_attention(s, il, L.attn, h, y);  // with attn_output.bias when the model has one
    model::add_inplace(x, y, n * n_embd);
    cpu::rms_norm(x, L.ffn_norm.f32(), hp_.norm_rms_eps, n, n_embd, h);
    if (L.moe.gate_inp) {
      model::mixture_of_experts(s, L.moe, h, y);
    } else {
      model::feed_forward(s, L.ffn, model::Activation::Silu, h, n, y);
    }
    model::add_inplace(x, y, n * n_embd);
  }
  return x;
}

}  // namespace ferrite::cuda
