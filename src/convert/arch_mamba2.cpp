// mamba2: Mamba2ForCausalLM (state-spaces/mamba2-*, Mamba-Codestral's
// backbone.* names). As llama.cpp's converter writes it: A_log becomes
// ssm_a = -exp(A_log) and, with D, gets a trailing dimension of 1; the conv
// kernel [ch, 1, k] loses its middle dimension; the gated norm's weight is
// split by group [n_groups, d_inner / n_groups]; head_count is 0 and
// ssm.time_step_rank the number of heads. The output head is tied when the
// checkpoint has no lm_head.
#include "convert/arch.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

void mamba2_params(Params& p) {
  Dims& d = p.dims;
  d.n_layer = p.req_int({"num_hidden_layers", "n_layer", "n_layers"});
  d.embd = p.req_int({"hidden_size", "d_model"});
  d.vocab = p.opt_int({"vocab_size"}).value_or(0);
  const int64_t n_head = p.req_int({"num_heads"});
  const int64_t head_dim = p.opt_int({"head_dim"}).value_or(64);
  const int64_t d_inner = n_head * head_dim;
  d.ssm_groups = p.opt_int({"n_groups"}).value_or(1);
  if (n_head == 0 || d.ssm_groups == 0 || n_head % d.ssm_groups != 0) {
    throw ModelError(p.config_path() + ": num_heads " + std::to_string(n_head) + " is not a multiple of n_groups " +
                     std::to_string(d.ssm_groups));
  }
  if (auto expand = p.opt_float({"expand"}); expand && static_cast<int64_t>(*expand * d.embd) != d_inner) {
    throw ModelError(p.config_path() + ": num_heads x head_dim " + std::to_string(d_inner) +
                     " is not expand x hidden_size");
  }
  p.u32("context_length", int64_t{1} << 20);
  p.u32("embedding_length", d.embd);
  p.u32("feed_forward_length", 0);
  p.u32("attention.head_count", 0);
  p.u32("block_count", d.n_layer);
  p.u32("ssm.conv_kernel", p.opt_int({"conv_kernel", "d_conv"}).value_or(4));
  p.u32("ssm.inner_size", d_inner);
  p.u32("ssm.state_size", p.opt_int({"state_size", "d_state"}).value_or(128));
  p.u32("ssm.time_step_rank", n_head);
  p.u32("ssm.group_count", d.ssm_groups);
  p.f32("attention.layer_norm_rms_epsilon", p.opt_float({"layer_norm_epsilon", "rms_norm_eps"}).value_or(1e-5));
}

}  // namespace

std::vector<ArchDef> mamba2_archs() {
  using D = Dim;
  ArchDef a;
  a.gguf_arch = "mamba2";
  a.hf_classes = {"Mamba2ForCausalLM"};
  a.params = mamba2_params;
  a.vocab = vocab_gpt2;
  a.rename = [](const std::string& n) { return n.rfind("model.backbone.", 0) == 0 ? n.substr(6) : n; };
  const char* m = "backbone.layers.{bid}.mixer.";
  static const std::string in = std::string(m) + "in_proj.weight", conv = std::string(m) + "conv1d.weight",
                           conv_b = std::string(m) + "conv1d.bias", dt = std::string(m) + "dt_bias",
                           A = std::string(m) + "A_log", Dd = std::string(m) + "D", norm = std::string(m) + "norm.weight",
                           out = std::string(m) + "out_proj.weight";
  a.rules = {
      {"backbone.embeddings.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"backbone.embedding.weight", "token_embd.weight", {D::Vocab, D::Embd}},
      {"backbone.norm_f.weight", "output_norm.weight", {D::Embd}},
      {"lm_head.weight", "output.weight", {D::Vocab, D::Embd}},
      {"backbone.layers.{bid}.norm.weight", "blk.{bid}.attn_norm.weight", {D::Embd}},
      {in.c_str(), "blk.{bid}.ssm_in.weight", {D::Any, D::Embd}},
      {conv.c_str(), "blk.{bid}.ssm_conv1d.weight", {D::Any, D::One, D::Any}, kSqueeze},
      {conv_b.c_str(), "blk.{bid}.ssm_conv1d.bias", {D::Any}},
      {dt.c_str(), "blk.{bid}.ssm_dt.bias", {D::Any}},
      {A.c_str(), "blk.{bid}.ssm_a", {D::Any}, kNegExp | kUnsqueeze},
      {Dd.c_str(), "blk.{bid}.ssm_d", {D::Any}, kUnsqueeze},
      {norm.c_str(), "blk.{bid}.ssm_norm.weight", {D::Any}, kGroupRows},
      {out.c_str(), "blk.{bid}.ssm_out.weight", {D::Embd, D::Any}},
  };
  a.layer_requires = {{"blk.{bid}.ssm_in.weight"}, {"blk.{bid}.ssm_a"}, {"blk.{bid}.ssm_out.weight"}};
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  return {a};
}

}  // namespace ferrite::convert
