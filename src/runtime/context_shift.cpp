// Context::shift_sequence: the model's RoPE settings for KvCache::shift.
#include "core/error.h"
#include "runtime/context.h"

namespace ferrite::runtime {

void Context::shift_sequence(int seq, int32_t p0, int32_t p1, int32_t delta) {
  if (gpu_) throw InvalidArgument("shifting a sequence is not supported with GPU offload");
  if (model_->arch().is_encoder()) throw InvalidArgument("encoder models have no cache to shift");
  const model::HParams& hp = model_->hparams();
  const gguf::File& file = model_->file();
  // Models whose layers rotate differently (gemma3's local layers, phi3's
  // context-dependent factors) would need per-layer shifts.
  if (hp.arch == "gemma3" || file.find_tensor("rope_factors_short.weight") != nullptr ||
      file.find_tensor("rope_factors_long.weight") != nullptr) {
    throw InvalidArgument("context shift is not supported for " + hp.arch + " models");
  }
  const model::RopeParams& r = hp.rope;
  cpu::RopeConfig c;
  c.n_rot = r.n_rot;
  c.neox = r.neox;
  c.freq_base = r.freq_base;
  c.freq_scale = r.freq_scale;
  c.ext_factor = r.yarn_ext_factor;
  c.attn_factor = r.yarn_attn_factor;
  c.beta_fast = r.yarn_beta_fast;
  c.beta_slow = r.yarn_beta_slow;
  c.n_ctx_orig = r.n_ctx_orig;
  if (const gguf::TensorInfo* f = file.find_tensor("rope_freqs.weight")) {
    if (f->type != TensorType::F32 || f->ne[0] != r.n_rot / 2 || f->data == nullptr) {
      throw ModelError("rope_freqs.weight has an unexpected type or shape");
    }
    c.freq_factors = reinterpret_cast<const float*>(f->data);
  }
  cache_.shift(seq, p0, p1, delta, c);
}

}  // namespace ferrite::runtime
