#include "model/hparams.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace ferrite::model {
namespace {

// Upper bounds far above any real model; they keep a corrupt file from
// asking for absurd allocations.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 4096;
constexpr int64_t kMaxExperts = 4096;

int64_t bounded(const gguf::Metadata& md, const std::string& key, uint64_t value, int64_t max) {
  if (value == 0 || value > static_cast<uint64_t>(max)) {
    throw ModelError(md.file().path() + ": " + key + " = " + std::to_string(value) + " is out of range");
  }
  return static_cast<int64_t>(value);
}

RopeScaling parse_scaling(const std::string& s, const std::string& path) {
  if (s.empty() || s == "none") return RopeScaling::None;
  if (s == "linear") return RopeScaling::Linear;
  if (s == "yarn") return RopeScaling::Yarn;
  if (s == "longrope") return RopeScaling::LongRope;
  throw ModelError(path + ": unknown rope scaling type '" + s + "'");
}

// The SSM keys (hparams.h), each checked.
void read_ssm(const gguf::Metadata& md, HParams& hp) {
  auto get = [&](const char* suffix) {
    const std::string k = md.arch_key(suffix);
    return bounded(md, k, md.get_uint(k), kMaxDim);
  };
  hp.ssm_d_conv = get("ssm.conv_kernel");
  hp.ssm_d_inner = get("ssm.inner_size");
  hp.ssm_d_state = get("ssm.state_size");
  hp.ssm_n_head = get("ssm.time_step_rank");
  hp.ssm_n_group = md.has(md.arch_key("ssm.group_count")) ? get("ssm.group_count") : 1;
  const std::string& path = md.file().path();
  if (hp.ssm_d_inner % hp.ssm_n_head != 0 || hp.ssm_n_head % hp.ssm_n_group != 0 ||
      hp.ssm_d_inner % hp.ssm_n_group != 0) {
    throw ModelError(path + ": ssm.inner_size " + std::to_string(hp.ssm_d_inner) + ", time_step_rank " +
                     std::to_string(hp.ssm_n_head) + " and group_count " + std::to_string(hp.ssm_n_group) +
                     " do not divide");
  }
}

// RWKV's keys (hparams.h): the head size must divide the width.
void read_rwkv(const gguf::Metadata& md, HParams& hp) {
  const std::string k = md.arch_key("wkv.head_size");
  hp.rwkv_head_size = bounded(md, k, md.get_uint(k), kMaxDim);
  if (hp.n_embd % hp.rwkv_head_size != 0) {
    throw ModelError(md.file().path() + ": " + k + " " + std::to_string(hp.rwkv_head_size) +
                     " does not divide embedding_length " + std::to_string(hp.n_embd));
  }
  const std::string ts = md.arch_key("token_shift_count");
  hp.rwkv_token_shift = md.has(ts) ? bounded(md, ts, md.get_uint(ts), 2) : 2;
  if (auto ff = md.opt_uint(md.arch_key("feed_forward_length"))) {
    hp.n_ff = bounded(md, md.arch_key("feed_forward_length"), *ff, kMaxDim);
  }
}

// A model of SSM layers only: the keys that remain.
HParams finish_ssm_only(const gguf::Metadata& md, HParams& hp) {
  hp.norm_eps = md.opt_float(md.arch_key("attention.layer_norm_epsilon")).value_or(hp.norm_eps);
  hp.norm_rms_eps = md.opt_float(md.arch_key("attention.layer_norm_rms_epsilon")).value_or(hp.norm_rms_eps);
  return hp;
}

}  // namespace

HParams read_hparams(const gguf::Metadata& md) {
  HParams hp;
  hp.arch = md.architecture();
  const std::string& path = md.file().path();
  auto key = [&](const char* suffix) { return md.arch_key(suffix); };

  hp.n_embd = bounded(md, key("embedding_length"), md.get_uint(key("embedding_length")), kMaxDim);
  hp.n_layer = bounded(md, key("block_count"), md.get_uint(key("block_count")), kMaxLayers);
  hp.n_ctx_train = static_cast<int64_t>(md.opt_uint(key("context_length")).value_or(0));
  // State-space models (mamba2: head_count 0) and hybrids (granitehybrid:
  // head_count_kv 0 on the SSM layers) have layers without attention.
  // RWKV: no attention (llama.cpp's converter writes head_count 0).
  if (md.has(key("wkv.head_size"))) {
    read_rwkv(md, hp);
    hp.n_head = hp.n_head_kv = hp.head_dim = 0;
    hp.rope.n_rot = 0;
    return finish_ssm_only(md, hp);
  }
  const bool ssm = md.has(key("ssm.state_size"));
  if (ssm) read_ssm(md, hp);
  const uint64_t heads =
      md.per_layer_uint(key("attention.head_count"), static_cast<uint64_t>(hp.n_layer)).at(0);
  if (ssm && heads == 0) {
    hp.n_head = hp.n_head_kv = hp.head_dim = 0;
    hp.rope.n_rot = 0;
    return finish_ssm_only(md, hp);
  }
  hp.n_head = bounded(md, key("attention.head_count"), heads, kMaxDim);
  if (md.has(key("attention.head_count_kv"))) {
    uint64_t kv = md.per_layer_uint(key("attention.head_count_kv"), static_cast<uint64_t>(hp.n_layer)).at(0);
    if (ssm) {
      for (uint64_t v : md.per_layer_uint(key("attention.head_count_kv"), static_cast<uint64_t>(hp.n_layer))) {
        kv = std::max(kv, v);
      }
    }
    hp.n_head_kv = bounded(md, key("attention.head_count_kv"), kv, kMaxDim);
  } else {
    hp.n_head_kv = hp.n_head;
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    throw ModelError(path + ": head_count " + std::to_string(hp.n_head) + " is not a multiple of head_count_kv " +
                     std::to_string(hp.n_head_kv));
  }
  if (auto kl = md.opt_uint(key("attention.key_length"))) {
    hp.head_dim = bounded(md, key("attention.key_length"), *kl, kMaxDim);
    // Multi-head latent attention has other key and value sizes; its family reads them (arch_deepseek2.cpp).
    const bool latent = hp.arch == "deepseek2";
    if (auto vl = md.opt_uint(key("attention.value_length")); vl && *vl != *kl && !latent) {
      throw ModelError(path + ": key_length != value_length is not supported");
    }
  } else {
    if (hp.n_embd % hp.n_head != 0) {
      throw ModelError(path + ": embedding_length is not a multiple of head_count");
    }
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  if (auto ff = md.opt_uint(key("feed_forward_length"))) hp.n_ff = static_cast<int64_t>(*ff);
  if (auto e = md.opt_uint(key("expert_count"))) {
    hp.n_expert = bounded(md, key("expert_count"), *e, kMaxExperts);
    hp.n_expert_used = bounded(md, key("expert_used_count"), md.get_uint(key("expert_used_count")), hp.n_expert);
  }
  hp.norm_eps = md.opt_float(key("attention.layer_norm_epsilon")).value_or(hp.norm_eps);
  hp.norm_rms_eps = md.opt_float(key("attention.layer_norm_rms_epsilon")).value_or(hp.norm_rms_eps);
  hp.n_swa = static_cast<int64_t>(md.opt_uint(key("attention.sliding_window")).value_or(0));
  hp.attn_softcap = md.opt_float(key("attn_logit_softcapping")).value_or(0.0f);
  hp.final_softcap = md.opt_float(key("final_logit_softcapping")).value_or(0.0f);
  hp.max_alibi_bias = md.opt_float(key("attention.max_alibi_bias")).value_or(0.0f);
  if (!(hp.max_alibi_bias >= 0.0f && hp.max_alibi_bias <= 1e3f)) {
    throw ModelError(path + ": attention.max_alibi_bias " + std::to_string(hp.max_alibi_bias) + " is out of range");
  }

  RopeParams& r = hp.rope;
  r.n_rot = static_cast<int>(md.opt_uint(key("rope.dimension_count")).value_or(static_cast<uint64_t>(hp.head_dim)));
  if (r.n_rot <= 0 || r.n_rot > hp.head_dim || r.n_rot % 2 != 0) {
    throw ModelError(path + ": rope.dimension_count " + std::to_string(r.n_rot) + " is invalid for head size " +
                     std::to_string(hp.head_dim));
  }
  r.freq_base = md.opt_float(key("rope.freq_base")).value_or(r.freq_base);
  r.scaling = parse_scaling(md.opt_string(key("rope.scaling.type")).value_or(""), path);
  float factor = md.opt_float(key("rope.scaling.factor")).value_or(0.0f);
  if (factor == 0.0f) factor = md.opt_float(key("rope.scale_linear")).value_or(0.0f);
  if (factor != 0.0f && r.scaling == RopeScaling::None) r.scaling = RopeScaling::Linear;
  if (factor < 0.0f) throw ModelError(path + ": negative rope scaling factor");
  r.freq_scale = (factor == 0.0f || r.scaling == RopeScaling::LongRope) ? 1.0f : 1.0f / factor;
  r.n_ctx_orig = static_cast<int>(
      md.opt_uint(key("rope.scaling.original_context_length")).value_or(static_cast<uint64_t>(hp.n_ctx_train)));
  if (r.scaling == RopeScaling::Yarn) {
    r.yarn_ext_factor = 1.0f;
    r.yarn_attn_factor = md.opt_float(key("rope.scaling.attn_factor")).value_or(1.0f);
    r.yarn_truncate = md.opt_bool(key("rope.scaling.yarn_truncate")).value_or(true);
  }
  if (r.freq_base <= 0.0f) throw ModelError(path + ": rope.freq_base must be positive");
  return hp;
}

}  // namespace ferrite::model
