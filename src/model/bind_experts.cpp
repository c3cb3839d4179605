#include "model/bind_experts.h"

#include "core/error.h"

namespace ferrite::model {

bool has_experts(const WeightBinder& b, int64_t il) {
  return b.file().find_tensor(WeightBinder::layer_name(il, "ffn_gate_inp.weight")) != nullptr;
}

MoeWeights bind_experts(const WeightBinder& b, const HParams& hp, int64_t il, bool norm_weights) {
  if (hp.n_expert == 0) throw ModelError(b.file().path() + ": expert tensors present but expert_count missing");
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const gguf::TensorInfo* up = b.file().find_tensor(name("ffn_up_exps.weight"));
  if (up == nullptr) {
    throw ModelError(b.file().path() + ": required tensor " + name("ffn_up_exps.weight") + " is missing");
  }
  const int64_t n_embd = hp.n_embd, n_ff = up->ne[1], n_expert = hp.n_expert;
  MoeWeights m;
  m.gate_inp = b.require(name("ffn_gate_inp.weight"), {n_embd, n_expert});
  m.gate_exps = b.require(name("ffn_gate_exps.weight"), {n_embd, n_ff, n_expert});
  m.up_exps = b.require(name("ffn_up_exps.weight"), {n_embd, n_ff, n_expert});
  m.down_exps = b.require(name("ffn_down_exps.weight"), {n_ff, n_embd, n_expert});
  m.norm_weights = norm_weights;
  return m;
}

}  // namespace ferrite::model
