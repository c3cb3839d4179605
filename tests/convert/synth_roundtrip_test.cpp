// Hugging Face checkpoints written by this test from the synthetic F32 models
// of shared/models/synth (each GGUF tensor renamed to its Hugging Face name
// and transformed back: Q/K rows of llama un-permuted, gemma's norms minus
// one, experts split), with a config.json made from the GGUF's metadata.
// `ferrite convert --outtype f32` must give back the same tensors and
// hyperparameters, and the two files the same logits.
//
// gpt2 and gptneox are absent: their synthetic models have one KV head,
// which the Hugging Face classes cannot express (tests/convert/fixtures
// covers them with checkpoints that transformers made).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <regex>

#include "convert/converter.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "hf_dir.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

using test::Json;

enum Inverse : uint32_t { kNone = 0, kUnpermuteQ = 1, kUnpermuteK = 2, kMinusOne = 4, kSplitExperts = 8, kAddDim = 16 };

struct NameMap {
  const char* gguf;  // regex over the GGUF name; blk.(\d+) is captured
  const char* hf;    // with $1 for the layer (and {x} for an expert)
  uint32_t inverse = kNone;
};

struct Case {
  const char* file;
  const char* hf_class;
  std::vector<NameMap> names;
  std::function<Json(const gguf::Metadata&)> config;
  bool spm = true;  // tokenizer.model; else a byte-level tokenizer.json
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

// Llama-style names shared by most cases.
std::vector<NameMap> llama_names(bool permute) {
  const uint32_t q = permute ? kUnpermuteQ : kNone, k = permute ? kUnpermuteK : kNone;
  return {
      {R"(token_embd\.weight)", "model.embed_tokens.weight"},
      {R"(output_norm\.weight)", "model.norm.weight"},
      {R"(output\.weight)", "lm_head.weight"},
      {R"(blk\.(\d+)\.attn_norm\.weight)", "model.layers.$1.input_layernorm.weight"},
      {R"(blk\.(\d+)\.attn_q\.weight)", "model.layers.$1.self_attn.q_proj.weight", q},
      {R"(blk\.(\d+)\.attn_k\.weight)", "model.layers.$1.self_attn.k_proj.weight", k},
      {R"(blk\.(\d+)\.attn_v\.weight)", "model.layers.$1.self_attn.v_proj.weight"},
      {R"(blk\.(\d+)\.attn_q\.bias)", "model.layers.$1.self_attn.q_proj.bias", q},
      {R"(blk\.(\d+)\.attn_k\.bias)", "model.layers.$1.self_attn.k_proj.bias", k},
      {R"(blk\.(\d+)\.attn_v\.bias)", "model.layers.$1.self_attn.v_proj.bias"},
      {R"(blk\.(\d+)\.attn_output\.weight)", "model.layers.$1.self_attn.o_proj.weight"},
      {R"(blk\.(\d+)\.ffn_norm\.weight)", "model.layers.$1.post_attention_layernorm.weight"},
      {R"(blk\.(\d+)\.ffn_gate\.weight)", "model.layers.$1.mlp.gate_proj.weight"},
      {R"(blk\.(\d+)\.ffn_up\.weight)", "model.layers.$1.mlp.up_proj.weight"},
      {R"(blk\.(\d+)\.ffn_down\.weight)", "model.layers.$1.mlp.down_proj.weight"},
  };
}

Json decoder_config(const gguf::Metadata& md, const char* cls) {
  const std::string a = md.architecture();
  Json c = {{"architectures", {cls}},
            {"vocab_size", md.string_array("tokenizer.ggml.tokens").size()},
            {"hidden_size", md.get_uint(a + ".embedding_length")},
            {"intermediate_size", md.get_uint(a + ".feed_forward_length")},
            {"num_hidden_layers", md.get_uint(a + ".block_count")},
            {"num_attention_heads", md.get_uint(a + ".attention.head_count")},
            {"num_key_value_heads", md.get_uint(a + ".attention.head_count_kv")},
            {"max_position_embeddings", md.get_uint(a + ".context_length")}};
  if (auto e = md.opt_float(a + ".attention.layer_norm_rms_epsilon")) c["rms_norm_eps"] = *e;
  if (auto e = md.opt_float(a + ".attention.layer_norm_epsilon")) c["norm_epsilon"] = *e;
  if (auto t = md.opt_float(a + ".rope.freq_base")) c["rope_theta"] = *t;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"synth-llama-f32.gguf", "LlamaForCausalLM", llama_names(true),
                 [](const gguf::Metadata& md) { return decoder_config(md, "LlamaForCausalLM"); }});
  {
    auto names = llama_names(true);
    names.push_back({R"(blk\.(\d+)\.ffn_gate_inp\.weight)", "model.layers.$1.block_sparse_moe.gate.weight"});
    names.push_back({R"(blk\.(\d+)\.ffn_gate_exps\.weight)", "model.layers.$1.block_sparse_moe.experts.{x}.w1.weight",
                     kSplitExperts});
    names.push_back({R"(blk\.(\d+)\.ffn_down_exps\.weight)", "model.layers.$1.block_sparse_moe.experts.{x}.w2.weight",
                     kSplitExperts});
    names.push_back({R"(blk\.(\d+)\.ffn_up_exps\.weight)", "model.layers.$1.block_sparse_moe.experts.{x}.w3.weight",
                     kSplitExperts});
    out.push_back({"synth-llama-moe-f32.gguf", "MixtralForCausalLM", names, [](const gguf::Metadata& md) {
                     Json c = decoder_config(md, "MixtralForCausalLM");
                     c["num_local_experts"] = md.get_uint("llama.expert_count");
                     c["num_experts_per_tok"] = md.get_uint("llama.expert_used_count");
                     return c;
                   }});
  }
  out.push_back({"synth-qwen2-f32.gguf", "Qwen2ForCausalLM", llama_names(false),
                 [](const gguf::Metadata& md) { return decoder_config(md, "Qwen2ForCausalLM"); }});
  {
    auto names = llama_names(false);
    names.push_back({R"(blk\.(\d+)\.ffn_gate_inp\.weight)", "model.layers.$1.mlp.gate.weight"});
    names.push_back({R"(blk\.(\d+)\.ffn_gate_exps\.weight)", "model.layers.$1.mlp.experts.{x}.gate_proj.weight",
                     kSplitExperts});
    names.push_back({R"(blk\.(\d+)\.ffn_up_exps\.weight)", "model.layers.$1.mlp.experts.{x}.up_proj.weight",
                     kSplitExperts});
    names.push_back({R"(blk\.(\d+)\.ffn_down_exps\.weight)", "model.layers.$1.mlp.experts.{x}.down_proj.weight",
                     kSplitExperts});
    names.push_back({R"(blk\.(\d+)\.ffn_gate_shexp\.weight)", "model.layers.$1.mlp.shared_expert.gate_proj.weight"});
    names.push_back({R"(blk\.(\d+)\.ffn_up_shexp\.weight)", "model.layers.$1.mlp.shared_expert.up_proj.weight"});
    names.push_back({R"(blk\.(\d+)\.ffn_down_shexp\.weight)", "model.layers.$1.mlp.shared_expert.down_proj.weight"});
    names.push_back({R"(blk\.(\d+)\.ffn_gate_inp_shexp\.weight)", "model.layers.$1.mlp.shared_expert_gate.weight",
                     kAddDim});
    out.push_back({"synth-qwen2moe-f32.gguf", "Qwen2MoeForCausalLM", names,
                   [](const gguf::Metadata& md) {
                     Json c = decoder_config(md, "Qwen2MoeForCausalLM");
                     c["num_experts"] = md.get_uint("qwen2moe.expert_count");
                     c["num_experts_per_tok"] = md.get_uint("qwen2moe.expert_used_count");
                     c["moe_intermediate_size"] = md.get_uint("qwen2moe.expert_feed_forward_length");
                     c["shared_expert_intermediate_size"] = md.get_uint("qwen2moe.expert_shared_feed_forward_length");
                     return c;
                   },
                   false});
  }
  out.push_back({"synth-gemma2-f32.gguf",
                 "Gemma2ForCausalLM",
                 {
                     {R"(token_embd\.weight)", "model.embed_tokens.weight"},
                     {R"(output_norm\.weight)", "model.norm.weight", kMinusOne},
                     {R"(blk\.(\d+)\.attn_norm\.weight)", "model.layers.$1.input_layernorm.weight", kMinusOne},
                     {R"(blk\.(\d+)\.attn_q\.weight)", "model.layers.$1.self_attn.q_proj.weight"},
                     {R"(blk\.(\d+)\.attn_k\.weight)", "model.layers.$1.self_attn.k_proj.weight"},
                     {R"(blk\.(\d+)\.attn_v\.weight)", "model.layers.$1.self_attn.v_proj.weight"},
                     {R"(blk\.(\d+)\.attn_output\.weight)", "model.layers.$1.self_attn.o_proj.weight"},
                     {R"(blk\.(\d+)\.post_attention_norm\.weight)", "model.layers.$1.post_attention_layernorm.weight",
                      kMinusOne},
                     {R"(blk\.(\d+)\.ffn_norm\.weight)", "model.layers.$1.pre_feedforward_layernorm.weight", kMinusOne},
                     {R"(blk\.(\d+)\.post_ffw_norm\.weight)", "model.layers.$1.post_feedforward_layernorm.weight",
                      kMinusOne},
                     {R"(blk\.(\d+)\.ffn_gate\.weight)", "model.layers.$1.mlp.gate_proj.weight"},
                     {R"(blk\.(\d+)\.ffn_up\.weight)", "model.layers.$1.mlp.up_proj.weight"},
                     {R"(blk\.(\d+)\.ffn_down\.weight)", "model.layers.$1.mlp.down_proj.weight"},
                 },
                 [](const gguf::Metadata& md) {
                   Json c = decoder_config(md, "Gemma2ForCausalLM");
                   c["head_dim"] = md.get_uint("gemma2.attention.key_length");
                   c["query_pre_attn_scalar"] = md.get_uint("gemma2.attention.key_length");
                   c["sliding_window"] = md.get_uint("gemma2.attention.sliding_window");
                   c["attn_logit_softcapping"] = md.get_float("gemma2.attn_logit_softcapping");
                   c["final_logit_softcapping"] = md.get_float("gemma2.final_logit_softcapping");
                   return c;
                 }});
  out.push_back({"synth-phi3-f32.gguf",
                 "Phi3ForCausalLM",
                 {
                     {R"(token_embd\.weight)", "model.embed_tokens.weight"},
                     {R"(output_norm\.weight)", "model.norm.weight"},
                     {R"(output\.weight)", "lm_head.weight"},
                     {R"(blk\.(\d+)\.attn_norm\.weight)", "model.layers.$1.input_layernorm.weight"},
                     {R"(blk\.(\d+)\.attn_qkv\.weight)", "model.layers.$1.self_attn.qkv_proj.weight"},
                     {R"(blk\.(\d+)\.attn_output\.weight)", "model.layers.$1.self_attn.o_proj.weight"},
                     {R"(blk\.(\d+)\.ffn_norm\.weight)", "model.layers.$1.post_attention_layernorm.weight"},
                     {R"(blk\.(\d+)\.ffn_up\.weight)", "model.layers.$1.mlp.gate_up_proj.weight"},
                     {R"(blk\.(\d+)\.ffn_down\.weight)", "model.layers.$1.mlp.down_proj.weight"},
                 },
                 [](const gguf::Metadata& md) {
                   Json c = decoder_config(md, "Phi3ForCausalLM");
                   c["original_max_position_embeddings"] = md.get_uint("phi3.context_length");
                   c["sliding_window"] = md.get_uint("phi3.attention.sliding_window");
                   return c;
                 }});
  {
    std::vector<NameMap> names = {
        {R"(token_embd\.weight)", "model.embed_tokens.weight"},
        {R"(output_norm\.(weight|bias))", "model.norm.$1"},
        {R"(blk\.(\d+)\.attn_norm\.(weight|bias))", "model.layers.$1.input_layernorm.$2"},
        {R"(blk\.(\d+)\.attn_q\.(weight|bias))", "model.layers.$1.self_attn.q_proj.$2"},
        {R"(blk\.(\d+)\.attn_k\.(weight|bias))", "model.layers.$1.self_attn.k_proj.$2"},
        {R"(blk\.(\d+)\.attn_v\.(weight|bias))", "model.layers.$1.self_attn.v_proj.$2"},
        {R"(blk\.(\d+)\.attn_output\.(weight|bias))", "model.layers.$1.self_attn.o_proj.$2"},
        {R"(blk\.(\d+)\.ffn_norm\.(weight|bias))", "model.layers.$1.post_attention_layernorm.$2"},
        {R"(blk\.(\d+)\.ffn_up\.(weight|bias))", "model.layers.$1.mlp.c_fc.$2"},
        {R"(blk\.(\d+)\.ffn_down\.(weight|bias))", "model.layers.$1.mlp.c_proj.$2"},
    };
    out.push_back({"synth-starcoder2-f32.gguf", "Starcoder2ForCausalLM", names,
                   [](const gguf::Metadata& md) { return decoder_config(md, "Starcoder2ForCausalLM"); }, false});
  }
  out.push_back({"synth-falcon-f32.gguf",
                 "FalconForCausalLM",
                 {
                     {R"(token_embd\.weight)", "transformer.word_embeddings.weight"},
                     {R"(output_norm\.(weight|bias))", "transformer.ln_f.$1"},
                     {R"(output\.weight)", "lm_head.weight"},
                     {R"(blk\.(\d+)\.attn_norm\.(weight|bias))", "transformer.h.$1.input_layernorm.$2"},
                     // One KV group: the fused layout is already q..q k v.
                     {R"(blk\.(\d+)\.attn_qkv\.weight)", "transformer.h.$1.self_attention.query_key_value.weight"},
                     {R"(blk\.(\d+)\.attn_output\.weight)", "transformer.h.$1.self_attention.dense.weight"},
                     {R"(blk\.(\d+)\.ffn_up\.weight)", "transformer.h.$1.mlp.dense_h_to_4h.weight"},
                     {R"(blk\.(\d+)\.ffn_down\.weight)", "transformer.h.$1.mlp.dense_4h_to_h.weight"},
                 },
                 [](const gguf::Metadata& md) {
                   return Json{{"architectures", {"FalconForCausalLM"}},
                               {"vocab_size", md.string_array("tokenizer.ggml.tokens").size()},
                               {"hidden_size", md.get_uint("falcon.embedding_length")},
                               {"ffn_hidden_size", md.get_uint("falcon.feed_forward_length")},
                               {"num_hidden_layers", md.get_uint("falcon.block_count")},
                               {"num_attention_heads", md.get_uint("falcon.attention.head_count")},
                               {"multi_query", true},
                               {"new_decoder_architecture", false},
                               {"max_position_embeddings", md.get_uint("falcon.context_length")},
                               {"layer_norm_epsilon", md.get_float("falcon.attention.layer_norm_epsilon")}};
                 },
                 false});
  return out;
}

// Inverse of the converter's adjacent-pair reordering of `heads` heads.
std::vector<float> unpermute(const std::vector<float>& d, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t half = rows / heads / 2;
  std::vector<float> out(d.size());
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        std::copy_n(d.begin() + ((h * half + i) * 2 + j) * cols, cols, out.begin() + ((h * 2 + j) * half + i) * cols);
      }
    }
  }
  return out;
}

std::vector<float> floats_of(const gguf::TensorInfo& t) {
  std::vector<float> v(t.n_elements);
  std::memcpy(v.data(), t.data, t.n_bytes);
  return v;
}

void write_toy_bpe(const test::TempDir& dir) {
  test::write_json(dir.file("tokenizer.json"), test::toy_bpe_tokenizer_json());
  test::write_json(dir.file("tokenizer_config.json"), {{"eos_token", "<|endoftext|>"}});
}

void write_spm(const test::TempDir& dir, const gguf::Metadata& md) {
  const auto tokens = md.string_array("tokenizer.ggml.tokens");
  const auto scores = md.float_array("tokenizer.ggml.scores");
  const auto types = md.int_array("tokenizer.ggml.token_type");
  std::vector<test::SpmPieceSpec> pieces;
  for (size_t i = 0; i < tokens.size(); ++i) {
    pieces.push_back({tokens[i], scores[i], static_cast<int>(types[i])});
  }
  test::write_bytes(dir.file("tokenizer.model"), test::spm_model_bytes(pieces));
}

class SynthRoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(SynthRoundTrip, SameTensorsMetadataAndLogits) {
  const Case& c = GetParam();
  FERRITE_SHARED_FILE(path, std::string("models/synth/") + c.file);
  const gguf::File synth = gguf::File::open(path.string());
  const gguf::Metadata md(synth);
  const std::string arch = md.architecture();
  test::TempDir dir;
  test::write_json(dir.file("config.json"), c.config(md));
  if (c.spm) {
    write_spm(dir, md);
  } else {
    write_toy_bpe(dir);
  }

  // The checkpoint: every GGUF tensor under its Hugging Face name.
  std::vector<test::StEntry> entries;
  const int64_t n_head = static_cast<int64_t>(md.get_uint(arch + ".attention.head_count"));
  const int64_t n_kv = static_cast<int64_t>(md.get_uint(arch + ".attention.head_count_kv"));
  for (const gguf::TensorInfo& t : synth.tensors()) {
    const NameMap* m = nullptr;
    std::smatch match;
    for (const NameMap& n : c.names) {
      if (std::regex_match(t.name, match, std::regex(n.gguf))) {
        m = &n;
        break;
      }
    }
    ASSERT_NE(m, nullptr) << "no Hugging Face name for " << t.name;
    const std::string hf = match.format(m->hf);
    std::vector<float> v = floats_of(t);
    std::vector<int64_t> shape;
    for (uint32_t d = t.n_dims; d-- > 0;) shape.push_back(t.ne[d]);
    const int64_t rows = shape[0], cols = static_cast<int64_t>(v.size()) / rows;
    if (m->inverse & kUnpermuteQ) v = unpermute(v, rows, cols, n_head);
    if (m->inverse & kUnpermuteK) v = unpermute(v, rows, cols, n_kv);
    if (m->inverse & kMinusOne) {
      for (float& x : v) x -= 1.0f;
    }
    if (m->inverse & kAddDim) shape.insert(shape.begin(), 1);
    if (m->inverse & kSplitExperts) {
      const size_t per = v.size() / static_cast<size_t>(shape[0]);
      for (int64_t e = 0; e < shape[0]; ++e) {
        std::string name = hf;
        name.replace(name.find("{x}"), 3, std::to_string(e));
        entries.push_back(test::st_f32(name, {shape[1], shape[2]},
                                       std::vector<float>(v.begin() + e * per, v.begin() + (e + 1) * per)));
      }
      continue;
    }
    entries.push_back(test::st_f32(hf, shape, v));
  }
  test::write_bytes(dir.file("model.safetensors"), test::safetensors_bytes(entries));

  convert::ConvertOptions opt;
  opt.outtype = TensorType::F32;
  opt.vocab.pre_override = "gpt-2";
  const std::string out = dir.file("out.gguf");
  convert::convert_checkpoint(dir.path().string(), out, opt);

  const gguf::File conv = gguf::File::open(out);
  EXPECT_EQ(gguf::Metadata(conv).architecture(), arch);
  // Every tensor back, with its shape and values (gemma's 1 + (w - 1) may
  // differ from w in the last bit).
  for (const gguf::TensorInfo& t : synth.tensors()) {
    const gguf::TensorInfo* u = conv.find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->ne, t.ne) << t.name;
    ASSERT_EQ(u->type, TensorType::F32) << t.name;
    const std::vector<float> a = floats_of(t), b = floats_of(*u);
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    EXPECT_LE(worst, 1e-6) << t.name;
  }
  EXPECT_EQ(conv.tensors().size(), synth.tensors().size());
  // Every hyperparameter of the synthetic model, same value (the converter
  // may write more).
  for (const gguf::KeyValue& kv : synth.metadata()) {
    if (kv.key.rfind(arch + ".", 0) != 0) continue;
    const gguf::Value* v = conv.find(kv.key);
    ASSERT_NE(v, nullptr) << kv.key;
    EXPECT_EQ(v->to_string(), kv.value.to_string()) << kv.key;
  }

  // The same logits from both files.
  const std::vector<int32_t> tokens = {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889};
  std::vector<std::vector<float>> logits;
  for (const std::string& p : {path.string(), out}) {
    auto model = model::Model::load(p);
    runtime::Context ctx(model, {.n_ctx = 64, .n_batch = 64, .n_threads = 2});
    std::vector<int32_t> ids = tokens;
    for (int32_t& id : ids) id %= static_cast<int32_t>(model->hparams().n_vocab);
    ctx.eval(ids, 0, /*all_logits=*/true);
    std::vector<float> all;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto row = ctx.logits(static_cast<int64_t>(i));
      all.insert(all.end(), row.begin(), row.end());
    }
    logits.push_back(std::move(all));
  }
  ASSERT_EQ(logits[0].size(), logits[1].size());
  double worst = 0.0;
  for (size_t i = 0; i < logits[0].size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(logits[0][i]) - logits[1][i]));
  }
  EXPECT_LE(worst, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Archs, SynthRoundTrip, ::testing::ValuesIn(cases()));

}  // namespace
}  // namespace ferrite
