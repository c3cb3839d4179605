// Bad checkpoints: each must be refused with an error that says what is
// wrong (and never crash): a tiny Llama checkpoint written here, then broken
// one way at a time.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "convert/converter.h"
#include "convert/spm_model.h"
#include "core/error.h"
#include "hf_dir.h"

namespace ferrite {
namespace {

using test::Json;

constexpr int64_t kVocab = 32, kEmbd = 16, kHeads = 2, kKv = 1, kFf = 32, kLayers = 2;

std::vector<float> noise(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.02f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

Json llama_config() {
  return {{"architectures", {"LlamaForCausalLM"}}, {"vocab_size", kVocab},     {"hidden_size", kEmbd},
          {"intermediate_size", kFf},              {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads},
          {"num_key_value_heads", kKv},            {"rms_norm_eps", 1e-5},     {"max_position_embeddings", 64}};
}

std::vector<test::StEntry> llama_tensors() {
  const int64_t hd = kEmbd / kHeads;
  std::vector<test::StEntry> t;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    t.push_back(test::st_f32(name, shape, noise(n, seed++)));
  };
  add("model.embed_tokens.weight", {kVocab, kEmbd});
  add("model.norm.weight", {kEmbd});
  add("lm_head.weight", {kVocab, kEmbd});
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {kEmbd});
    add(p + "self_attn.q_proj.weight", {kHeads * hd, kEmbd});
    add(p + "self_attn.k_proj.weight", {kKv * hd, kEmbd});
    add(p + "self_attn.v_proj.weight", {kKv * hd, kEmbd});
    add(p + "self_attn.o_proj.weight", {kEmbd, kHeads * hd});
    add(p + "post_attention_layernorm.weight", {kEmbd});
    add(p + "mlp.gate_proj.weight", {kFf, kEmbd});
    add(p + "mlp.up_proj.weight", {kFf, kEmbd});
    add(p + "mlp.down_proj.weight", {kEmbd, kFf});
  }
  return t;
}

std::string spm_vocab() {
  std::vector<test::SpmPieceSpec> pieces = {{"<unk>", 0, 2}, {"<s>", 0, 3}, {"</s>", 0, 3}};
  for (int i = 3; i < kVocab; ++i) pieces.push_back({"\xe2\x96\x81t" + std::to_string(i), -static_cast<float>(i), 1});
  return test::spm_model_bytes(pieces);
}

// A good checkpoint; `mutate` breaks it before conversion. Returns the error
// text ("" when conversion succeeded).
std::string convert_with(const std::function<void(const test::TempDir&, Json&, std::vector<test::StEntry>&)>& mutate) {
  test::TempDir dir;
  Json cfg = llama_config();
  std::vector<test::StEntry> tensors = llama_tensors();
  test::write_bytes(dir.file("tokenizer.model"), spm_vocab());
  mutate(dir, cfg, tensors);
  if (!cfg.is_null()) test::write_json(dir.file("config.json"), cfg);
  if (!tensors.empty()) test::write_bytes(dir.file("model.safetensors"), test::safetensors_bytes(tensors));
  try {
    convert::ConvertOptions opt;
    convert::convert_checkpoint(dir.path().string(), dir.file("out.gguf"), opt);
  } catch (const Error& e) {
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.gguf"))) << "a failed conversion left its output";
    return e.what();
  }
  return "";
}

void rename(std::vector<test::StEntry>& t, const std::string& from, const std::string& to) {
  for (auto& e : t) {
    if (e.name == from) e.name = to;
  }
}

void drop(std::vector<test::StEntry>& t, const std::string& name) {
  std::erase_if(t, [&](const test::StEntry& e) { return e.name == name; });
}

#define EXPECT_ERROR_HAS(text, needle) EXPECT_NE((text).find(needle), std::string::npos) << (text)

TEST(ConvertErrors, GoodCheckpointConverts) {
  EXPECT_EQ(convert_with([](auto&, auto&, auto&) {}), "");
}

TEST(ConvertErrors, MissingFiles) {
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c = nullptr; }), "config.json");
  EXPECT_ERROR_HAS(convert_with([](auto&, auto&, auto& t) { t.clear(); }), "no model.safetensors");
  // Without tokenizer.model, llama reads tokenizer.json: neither is there.
  EXPECT_ERROR_HAS(convert_with([](const test::TempDir& d, auto&, auto&) {
                     std::filesystem::remove(d.file("tokenizer.model"));
                   }),
                   "tokenizer.json");
  // gemma needs tokenizer.model.
  EXPECT_ERROR_HAS(convert_with([](const test::TempDir& d, Json& c, auto&) {
                     std::filesystem::remove(d.file("tokenizer.model"));
                     c["architectures"] = Json::array({"GemmaForCausalLM"});
                     c["head_dim"] = 8;
                   }),
                   "tokenizer.model");
}

TEST(ConvertErrors, UnknownArchitecture) {
  const std::string e = convert_with([](auto&, Json& c, auto&) { c["architectures"] = Json::array({"MambaForCausalLM"}); });
  EXPECT_ERROR_HAS(e, "MambaForCausalLM is not supported");
  EXPECT_ERROR_HAS(e, "LlamaForCausalLM");  // the list of supported classes
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c.erase("architectures"); }), "architectures");
}

TEST(ConvertErrors, ShapesMustMatchConfig) {
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["num_key_value_heads"] = 2; }), "implies");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["intermediate_size"] = 48; }),
                   "intermediate_size 48");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["num_hidden_layers"] = 1; }), "is for layer 1");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["num_hidden_layers"] = 3; }),
                   "no tensor for blk.2.attn_norm.weight");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["num_key_value_heads"] = 3; }),
                   "not a multiple of num_key_value_heads");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["num_attention_heads"] = 3; }),
                   "not a multiple of num_attention_heads");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c["hidden_size"] = "16"; }), "must be an integer");
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c.erase("num_hidden_layers"); }), "is missing");
}

TEST(ConvertErrors, TensorsMustFitTheArchitecture) {
  EXPECT_ERROR_HAS(convert_with([](auto&, auto&, auto& t) {
                     rename(t, "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.upper.weight");
                   }),
                   "cannot map tensor model.layers.0.mlp.upper.weight");
  EXPECT_ERROR_HAS(convert_with([](auto&, auto&, auto& t) { drop(t, "model.layers.1.self_attn.v_proj.weight"); }),
                   "no tensor for blk.1.attn_v.weight");
  EXPECT_ERROR_HAS(convert_with([](auto&, auto&, auto& t) {
                     for (auto& e : t) {
                       if (e.name == "model.norm.weight") e.dtype = "I32";
                     }
                   }),
                   "dtype I32");
  // A tokenizer whose size differs from the embedding table's rows.
  EXPECT_ERROR_HAS(convert_with([](auto&, Json& c, auto&) { c.erase("vocab_size"); c["vocab_size"] = 40; }),
                   "vocab_size 40");
}

TEST(ConvertErrors, ExpertsMustBeComplete) {
  auto moe = [](const test::TempDir&, Json& c, std::vector<test::StEntry>& t) {
    c["architectures"] = Json::array({"MixtralForCausalLM"});
    c["num_local_experts"] = 2;
    c["num_experts_per_tok"] = 1;
    for (int l = 0; l < kLayers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      drop(t, p + "mlp.gate_proj.weight");
      drop(t, p + "mlp.up_proj.weight");
      drop(t, p + "mlp.down_proj.weight");
      t.push_back(test::st_f32(p + "block_sparse_moe.gate.weight", {2, kEmbd}, noise(2 * kEmbd, 7)));
      for (int e = 0; e < 2; ++e) {
        const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
        t.push_back(test::st_f32(x + "w1.weight", {kFf, kEmbd}, noise(kFf * kEmbd, 8)));
        t.push_back(test::st_f32(x + "w2.weight", {kEmbd, kFf}, noise(kFf * kEmbd, 9)));
        t.push_back(test::st_f32(x + "w3.weight", {kFf, kEmbd}, noise(kFf * kEmbd, 10)));
      }
    }
  };
  EXPECT_EQ(convert_with(moe), "");
  EXPECT_ERROR_HAS(convert_with([&](const test::TempDir& d, Json& c, auto& t) {
                     moe(d, c, t);
                     drop(t, "model.layers.1.block_sparse_moe.experts.1.w3.weight");
                   }),
                   "lacks expert 1 of blk.1.ffn_up_exps.weight");
  EXPECT_ERROR_HAS(convert_with([&](const test::TempDir& d, Json& c, auto& t) {
                     moe(d, c, t);
                     c["num_local_experts"] = 1;
                   }),
                   "is expert 1");
}

TEST(ConvertErrors, BrokenTokenizerFiles) {
  EXPECT_ERROR_HAS(convert_with([](const test::TempDir& d, auto&, auto&) {
                     const std::string m = spm_vocab();
                     test::write_bytes(d.file("tokenizer.model"), m.substr(0, m.size() / 2));
                   }),
                   "tokenizer.model");
  EXPECT_ERROR_HAS(convert_with([](const test::TempDir& d, auto&, auto&) {
                     test::write_bytes(d.file("tokenizer_config.json"), "{\"chat_template\": ");
                   }),
                   "tokenizer_config.json");
}

TEST(SpmModel, WireFormatErrors) {
  auto error_of = [](const std::string& b) -> std::string {
    try {
      convert::SpmModel::parse(reinterpret_cast<const uint8_t*>(b.data()), b.size(), "t.model");
    } catch (const FormatError& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string good = test::spm_model_bytes({{"<unk>", 0, 2}, {"a", -1.5f, 1}});
  const convert::SpmModel m =
      convert::SpmModel::parse(reinterpret_cast<const uint8_t*>(good.data()), good.size(), "t.model");
  ASSERT_EQ(m.pieces.size(), 2u);
  EXPECT_EQ(m.pieces[1].piece, "a");
  EXPECT_EQ(m.pieces[1].score, -1.5f);
  EXPECT_EQ(m.pieces[0].type, convert::SpmPieceType::Unknown);
  EXPECT_EQ(m.model_type, 2);
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_FALSE(m.remove_extra_whitespaces);
  EXPECT_ERROR_HAS(error_of(good.substr(0, 7)), "past the end");
  EXPECT_ERROR_HAS(error_of(std::string("\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12)), "varint");
  EXPECT_ERROR_HAS(error_of(test::pb_bytes(1, test::pb_uint(3, 9))), "unknown piece type");
  EXPECT_ERROR_HAS(error_of(test::pb_uint(7, 1)), "no pieces");
  EXPECT_ERROR_HAS(error_of(std::string("\x0b", 1)), "wire type");
}

}  // namespace
}  // namespace ferrite
