// llama: Llama 1-3, Mistral and Mixtral checkpoints. Q and K rows are
// reordered for llama.cpp's adjacent-pair RoPE; Llama 3.1's "llama3" RoPE
// scaling becomes a rope_freqs tensor; linear scaling a factor. The tokenizer
// is tokenizer.model when present, else tokenizer.json's byte-level BPE.
#include <cmath>
#include <numbers>

#include "convert/arch.h"
#include "convert/decoder_rules.h"
#include "core/error.h"

namespace ferrite::convert {

// Llama 3.1's per-frequency factors, in float32 as llama.cpp computes them.
std::vector<ExtraTensor> llama3_rope_freqs(Params& p) {
  const Json* rs = p.rope_scaling();
  if (rs == nullptr || rs->value("rope_type", std::string()) != "llama3") return {};
  const std::string where = p.config_path() + " rope_scaling";
  const float base = static_cast<float>(p.rope_theta().value_or(10000.0));
  const int64_t dim = p.dims.head_dim;
  const auto factor = static_cast<float>(json_number(*rs, "factor", where).value_or(8.0));
  const auto low = static_cast<float>(json_number(*rs, "low_freq_factor", where).value_or(1.0));
  const auto high = static_cast<float>(json_number(*rs, "high_freq_factor", where).value_or(4.0));
  const auto old_ctx = static_cast<float>(
      json_number(*rs, "original_max_position_embeddings", where)
          .value_or(p.opt_float({"original_max_position_embeddings"}).value_or(8192.0)));
  const float low_wavelen = old_ctx / low, high_wavelen = old_ctx / high;
  if (low_wavelen == high_wavelen) throw ModelError(where + ": low_freq_factor equals high_freq_factor");
  ExtraTensor t{"rope_freqs.weight", {}, {dim / 2}};
  for (int64_t i = 0; i < dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(dim));
    const float wavelen = 2.0f * std::numbers::pi_v<float> / freq;
    if (wavelen < high_wavelen) {
      t.data.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      t.data.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      t.data.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return {t};
}

namespace {

void llama_params(Params& p) {
  decoder_dims(p);
  base_params(p);
  p.u32("vocab_size", p.req_int({"vocab_size"}));
  p.u32("rope.dimension_count", p.dims.head_dim);
  if (const Json* rs = p.rope_scaling()) {
    const std::string type = rs->value("type", rs->value("rope_type", std::string()));
    if (type == "linear" && rs->contains("factor")) {
      p.str("rope.scaling.type", "linear");
      p.f32("rope.scaling.factor", json_number(*rs, "factor", p.config_path()).value_or(1.0));
    }
  }
}

bool is_llama_hf_bpe(const HfFiles& f) {
  if (!f.tokenizer) return false;
  const Json& m = (*f.tokenizer)["model"];
  if (!m.is_object() || m.value("type", std::string()) != "BPE" || !m.value("byte_fallback", false)) return false;
  const Json& d = (*f.tokenizer)["decoder"];
  return d.is_object() && d.value("type", std::string()) == "Sequence";
}

VocabKeys llama_vocab(const HfFiles& f, int64_t vocab_size, const VocabOptions& opt) {
  VocabKeys v;
  if (f.has("tokenizer.model")) {
    v = vocab_sentencepiece(f, vocab_size);
  } else if (is_llama_hf_bpe(f)) {
    throw ModelError(f.dir + ": tokenizer.json is a SentencePiece-style BPE (byte_fallback) and tokenizer.model is "
                     "missing; llama.cpp converts such a tokenizer with placeholder scores that do not tokenize "
                     "correctly, so ferrite needs the tokenizer.model file");
  } else {
    v = vocab_gpt2(f, vocab_size, opt);
  }
  if (f.tokenizer_config) {
    if (auto b = json_bool(*f.tokenizer_config, "add_prefix_space", f.path("tokenizer_config.json"))) {
      v.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(*b));
    }
  }
  return v;
}

}  // namespace

std::vector<ArchDef> llama_archs() {
  ArchDef a;
  a.gguf_arch = "llama";
  a.hf_classes = {"LlamaForCausalLM", "LLaMAForCausalLM", "MistralForCausalLM", "MixtralForCausalLM"};
  a.params = llama_params;
  a.vocab = llama_vocab;
  DecoderRuleOptions o;
  o.permute_qk = true;
  o.moe = MoeLayout::Mixtral;
  a.rules = decoder_rules(o);
  a.layer_requires = decoder_layer_requires(o);
  a.requires_ = {"token_embd.weight", "output_norm.weight"};
  a.drop_suffixes = {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"};
  a.extra = llama3_rope_freqs;
  return {a};
}

}  // namespace ferrite::convert
