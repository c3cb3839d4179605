#include "model/layer_rope.h"

#include "core/error.h"
#include "model/longrope.h"
#include "model/model.h"

namespace ferrite::model {
namespace {

// An F32 vector of the file's [n_rot/2] factors, or null when absent.
const float* factors(const gguf::File& file, const char* name, int n_rot) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return nullptr;
  if (t->type != TensorType::F32 || t->ne[0] != n_rot / 2 || t->data == nullptr) {
    throw ModelError(std::string(name) + " has an unexpected type or shape");
  }
  return reinterpret_cast<const float*>(t->data);
}

}  // namespace

backend::RopeConfig rope_config(const RopeParams& r, const float* freq_factors) {
  backend::RopeConfig c;
  c.n_rot = r.n_rot;
  c.neox = r.neox;
  c.freq_base = r.freq_base;
  c.freq_scale = r.freq_scale;
  c.ext_factor = r.yarn_ext_factor;
  c.attn_factor = r.yarn_attn_factor;
  c.beta_fast = r.yarn_beta_fast;
  c.beta_slow = r.yarn_beta_slow;
  c.n_ctx_orig = r.n_ctx_orig;
  c.yarn_truncate = r.yarn_truncate;
  c.freq_factors = freq_factors;
  return c;
}

RopeParams gemma3_local_rope(const RopeParams& r) {
  RopeParams local = r;
  local.freq_base = kGemma3LocalRopeBase;
  local.freq_scale = 1.0f;
  local.yarn_ext_factor = 0.0f;
  return local;
}

backend::RopeConfig layer_rope(const Model& m, int64_t layer, int64_t n_cells) {
  const HParams& hp = m.hparams();
  const gguf::File& file = m.file();
  const int n_rot = hp.rope.n_rot;
  if (hp.arch == "gemma3" && hp.n_swa > 0 && (layer + 1) % kGemma3SlidingPattern != 0) {
    return rope_config(gemma3_local_rope(hp.rope), nullptr);
  }
  if ((hp.arch == "smollm3" && (layer + 1) % kSmolLM3NoRopeStep == 0) ||
      (hp.arch == "llama4" && (layer + 1) % kLlama4NoRopeStep == 0)) {
    backend::RopeConfig none = rope_config(hp.rope, nullptr);
    none.n_rot = 0;  // keys without position: a shift leaves them
    return none;
  }
  // LongRoPE (phi3): the short factors (or rope_freqs) up to the original
  // context, the long ones beyond it.
  const float* short_f = factors(file, "rope_factors_short.weight", n_rot);
  const float* long_f = factors(file, "rope_factors_long.weight", n_rot);
  const float* freqs = factors(file, "rope_freqs.weight", n_rot);
  if (short_f != nullptr || long_f != nullptr) {
    return rope_config(hp.rope, longrope_factors(short_f != nullptr ? short_f : freqs, long_f, n_cells, hp.rope.n_ctx_orig));
  }
  return rope_config(hp.rope, freqs);
}

}  // namespace ferrite::model
