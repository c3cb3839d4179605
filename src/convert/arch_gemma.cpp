// gemma, gemma2 and gemma3 (text). Their RMSNorms scale by (1 + w): the
// converter stores 1 + w, as llama.cpp does. No lm_head (tied). gemma2 adds
// soft-capping and a sliding window; gemma3 per-head Q/K norms, a local
// window on five layers of six, and linear RoPE scaling on the global ones.
// The tokenizer is tokenizer.model, without a space prefix.
#include <cmath>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {
namespace {

constexpr int64_t kGemma3Pattern = 6;       // what llama.cpp (and ferrite) assume
constexpr double kGemma3LocalBase = 10000.0;

void gemma_common(Params& p, int version) {
  decoder_dims(p);
  const bool v3 = version == 3;
  if (v3) {
    p.dims.n_head = p.opt_int({"num_attention_heads"}).value_or(8);
    p.dims.n_head_kv = p.opt_int({"num_key_value_heads"}).value_or(4);
    p.dims.head_dim = p.opt_int({"head_dim"}).value_or(256);
  }
  p.u32("context_length", v3 ? p.opt_int({"max_position_embeddings"}).value_or(131072)
                             : p.req_int({"max_position_embeddings"}));
  p.u32("embedding_length", p.dims.embd);
  p.u32("block_count", p.dims.n_layer);
  p.u32("feed_forward_length", p.req_int({"intermediate_size"}));
  p.u32("attention.head_count", p.dims.n_head);
  p.f32("attention.layer_norm_rms_epsilon", v3 ? p.opt_float({"rms_norm_eps"}).value_or(1e-6)
                                               : p.req_float({"rms_norm_eps"}));
  p.u32("attention.key_length", p.dims.head_dim);
  p.u32("attention.value_length", p.dims.head_dim);
  if (v3) {
    // transformers 5 nests gemma3's RoPE per layer type.
    const Json* rp = json_object(p.files().config, "rope_parameters", p.config_path());
    const Json* global = rp != nullptr ? json_object(*rp, "full_attention", p.config_path()) : nullptr;
    const Json* local = rp != nullptr ? json_object(*rp, "sliding_attention", p.config_path()) : nullptr;
    std::optional<double> theta = p.rope_theta();
    if (!theta && global != nullptr) theta = json_number(*global, "rope_theta", p.config_path());
    p.f32("rope.freq_base", theta.value_or(1000000.0));
    p.u32("attention.sliding_window", p.req_int({"sliding_window"}));
    p.u32("attention.head_count_kv", p.dims.n_head_kv);
    const Json* rs = p.rope_scaling();
    if (global != nullptr && global->value("rope_type", std::string("default")) != "default") rs = global;
    if (rs != nullptr) {
      const std::string type = rs->value("rope_type", rs->value("type", std::string()));
      if (type != "linear") throw ModelError(p.config_path() + ": gemma3 rope scaling '" + type + "' is not linear");
      p.str("rope.scaling.type", "linear");
      p.f32("rope.scaling.factor", json_number(*rs, "factor", p.config_path()).value_or(1.0));
    }
    const int64_t pattern = p.opt_int({"sliding_window_pattern"}).value_or(kGemma3Pattern);
    if (pattern != kGemma3Pattern) {
      p.notes.push_back("sliding_window_pattern " + std::to_string(pattern) +
                        ": llama.cpp and ferrite run gemma3 with a global layer every 6th");
    }
    std::optional<double> local_base = p.opt_float({"rope_local_base_freq"});
    if (!local_base && local != nullptr) local_base = json_number(*local, "rope_theta", p.config_path());
    if (local_base && *local_base != kGemma3LocalBase) {
      p.notes.push_back("rope_local_base_freq is not 10000, which llama.cpp and ferrite assume");
    }
  } else {
    p.u32("attention.head_count_kv", p.dims.n_head_kv);
  }
  if (version == 2) {
    if (auto v = p.opt_float({"attn_logit_softcapping"})) p.f32("attn_logit_softcapping", *v);
    if (auto v = p.opt_float({"final_logit_softcapping"})) p.f32("final_logit_softcapping", *v);
    p.u32("attention.sliding_window", p.req_int({"sliding_window"}));
  }
  if (version >= 2) {
    // llama.cpp scales queries by 1/sqrt(head_dim) except on the largest
    // sizes; a checkpoint that asks otherwise would run differently.
    if (auto s = p.opt_float({"query_pre_attn_scalar"}); s && *s != static_cast<double>(p.dims.head_dim)) {
      p.notes.push_back("query_pre_attn_scalar " + std::to_string(*s) +
                        " differs from head_dim; llama.cpp and ferrite use head_dim except for the largest models");
    }
  }
}

VocabKeys gemma_vocab(const HfFiles& f, int64_t vocab_size, const VocabOptions&) {
  VocabKeys v = vocab_sentencepiece(f, vocab_size);
  // CodeGemma's end of turn: llama.cpp sets id 107; here only where it is that token.
  const gguf::Value* tokens = v.find("tokenizer.ggml.tokens");
  if (tokens != nullptr && tokens->size() > 107 && tokens->items()[107].as_string() == "<end_of_turn>" &&
      v.find("tokenizer.ggml.eot_token_id") == nullptr) {
    v.set("tokenizer.ggml.eot_token_id", gguf::Value::u32(107));
  }
  v.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(false));
  return v;
}

ArchDef make(const char* arch, std::vector<const char*> classes, int version) {
  ArchDef a;
  a.gguf_arch = arch;
  a.hf_classes = std::move(classes);
  a.params = [version](Params& p) { gemma_common(p, version); };
  a.vocab = gemma_vocab;
  DecoderRuleOptions o;
  o.gemma = true;
  o.post_norms = version >= 2;
  o.qk_norm = version == 3;
  a.rules = decoder_rules(o);
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".rotary_emb.inv_freq"};
  return a;
}

}  // namespace

std::vector<ArchDef> gemma_archs() {
  return {make("gemma", {"GemmaForCausalLM"}, 1), make("gemma2", {"Gemma2ForCausalLM"}, 2),
          make("gemma3", {"Gemma3ForCausalLM"}, 3)};
}

}  // namespace ferrite::convert
