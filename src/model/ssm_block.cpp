#include "model/ssm_block.h"

#include <string>

#include "core/error.h"

namespace ferrite::model {

SsmWeights bind_ssm(const WeightBinder& b, const HParams& hp, int64_t il) {
  if (hp.ssm_d_state <= 0) throw ModelError(b.file().path() + ": SSM layers without ssm.* keys");
  auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
  const int64_t d_inner = hp.ssm_d_inner, ng = hp.ssm_n_group, ds = hp.ssm_d_state, nh = hp.ssm_n_head;
  const int64_t ch = d_inner + 2 * ng * ds;
  SsmWeights w;
  w.in = b.require(name("ssm_in.weight"), {hp.n_embd, 2 * d_inner + 2 * ng * ds + nh});
  w.conv = b.require(name("ssm_conv1d.weight"), {hp.ssm_d_conv, ch});
  w.conv_b = b.require_vec(name("ssm_conv1d.bias"), ch);
  w.dt_b = b.require_vec(name("ssm_dt.bias"), nh);
  w.a = b.require(name("ssm_a"), {1, nh});
  w.d = b.require(name("ssm_d"), {1, nh});
  w.norm = b.require(name("ssm_norm.weight"), {d_inner / ng, ng});
  w.out = b.require(name("ssm_out.weight"), {d_inner, hp.n_embd});
  for (const Tensor* t : {&w.conv, &w.a, &w.d, &w.norm}) {
    if (t->type() != TensorType::F32) {
      throw ModelError(b.file().path() + ": " + t->info->name + " must be F32, is " + tensor_type_name(t->type()));
    }
  }
  return w;
}

SsmSpec ssm_spec(const HParams& hp, int64_t il, const SsmWeights& w) {
  SsmSpec s;
  s.layer = il;
  s.w = &w;
  s.d_conv = hp.ssm_d_conv;
  s.d_inner = hp.ssm_d_inner;
  s.d_state = hp.ssm_d_state;
  s.n_group = hp.ssm_n_group;
  s.n_head = hp.ssm_n_head;
  s.eps = hp.norm_rms_eps;
  return s;
}

}  // namespace ferrite::model
