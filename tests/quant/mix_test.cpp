// Our preset mixes give every tensor of synth-llama-f32.gguf the type that
// llama.cpp's quantizer gave it (the golden lists each file's types).
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "quant/mix.h"
#include "support/test_data.h"

namespace ferrite::quant {
namespace {

TEST(Mix, EveryPresetMatchesLlamaCpp) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  const nlohmann::json golden = nlohmann::json::parse(test::read_file(golden_path));
  const gguf::File f32 = gguf::File::open(f32_path.string());
  int checked = 0;
  for (const auto& [preset_name, tensors] : golden.items()) {
    const Preset* preset = find_preset(preset_name);
    ASSERT_NE(preset, nullptr) << preset_name;
    MixOptions options;
    options.has_imatrix = true;  // the golden files were made with the imatrix
    const auto types = plan_mix(f32, *preset, options);
    ASSERT_EQ(types.size(), f32.tensors().size());
    for (size_t i = 0; i < types.size(); ++i) {
      const auto& name = f32.tensors()[i].name;
      EXPECT_EQ(tensor_type_name(types[i]), tensors.at(name).at("type").get<std::string>())
          << preset_name << " " << name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

// testbed-small's shapes (n_embd 256, n_ff 640, 4 layers, 4 of 8 heads for
// k/v, tied embeddings): ffn_down's 640-wide rows do not divide into 256-blocks
// and fall back. Expected: the types llama.cpp c392e50's llama-quantize gave
// ffn_down in bench/quality.sh's files of this model.
TEST(Mix, FallbackForRowsOfPartialSuperBlocksMatchesLlamaCpp) {
  std::vector<gguf::TensorInfo> tensors;
  auto add = [&](const std::string& name, int64_t cols, int64_t rows) {
    gguf::TensorInfo t;
    t.name = name;
    t.type = TensorType::F16;
    t.n_dims = 2;
    t.ne = {cols, rows, 1, 1};
    t.n_elements = static_cast<uint64_t>(cols * rows);
    tensors.push_back(t);
  };
  add("token_embd.weight", 256, 4096);
  for (int i = 0; i < 4; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_q.weight", 256, 256);
    add(b + "attn_k.weight", 256, 128);
    add(b + "attn_v.weight", 256, 128);
    add(b + "attn_output.weight", 256, 256);
    add(b + "ffn_gate.weight", 256, 640);
    add(b + "ffn_up.weight", 256, 640);
    add(b + "ffn_down.weight", 640, 256);
  }
  MixModel model;
  model.arch = "llama";
  model.n_head = 8;
  model.n_head_kv = 4;
  model.n_layer = 4;
  MixOptions options;
  options.has_imatrix = true;
  const std::pair<const char*, TensorType> expected[] = {
      {"Q2_K", TensorType::IQ4_NL},   {"Q3_K_S", TensorType::IQ4_NL}, {"Q3_K_M", TensorType::Q5_0},
      {"Q3_K_L", TensorType::Q5_1},   {"IQ1_S", TensorType::IQ4_NL},  {"IQ2_XXS", TensorType::IQ4_NL},
      {"IQ3_XXS", TensorType::IQ4_NL}, {"Q4_0", TensorType::Q4_0},
  };
  for (const auto& [preset, type] : expected) {
    const Preset* p = find_preset(preset);
    ASSERT_NE(p, nullptr) << preset;
    const auto types = plan_mix(tensors, model, *p, options);
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].name.find("ffn_down") == std::string::npos) continue;
      EXPECT_EQ(tensor_type_name(types[i]), tensor_type_name(type)) << preset << " " << tensors[i].name;
    }
  }
}

TEST(Mix, PresetNamesInAnyCase) {
  ASSERT_NE(find_preset("q4_k_m"), nullptr);
  EXPECT_EQ(find_preset("q4_k_m"), find_preset("Q4_K_M"));
  EXPECT_EQ(find_preset("Q4_K_M")->file_type, 15u);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(find_preset("nonsense"), nullptr);
  // llama.cpp's quantize aliases: the bare K-quant names mean the _M mix, and
  // the numeric file type (LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, ..._Q8_0 = 7).
  EXPECT_EQ(find_preset("q4_K"), find_preset("Q4_K_M"));
  EXPECT_EQ(find_preset("Q3_K"), find_preset("Q3_K_M"));
  EXPECT_EQ(find_preset("q5_k"), find_preset("Q5_K_M"));
  EXPECT_EQ(find_preset("15"), find_preset("Q4_K_M"));
  EXPECT_EQ(find_preset("7"), find_preset("Q8_0"));
  EXPECT_EQ(find_preset("99"), nullptr);
  EXPECT_EQ(find_preset("Q6_K")->file_type, 18u);  // bare Q6_K is its own preset, not an alias
}

}  // namespace
}  // namespace ferrite::quant

namespace ferrite::quant {
namespace {

// MXFP4 (file type 38, ik_llama.cpp's LLAMA_FTYPE_MOSTLY_MXFP4): MXFP4 under
// the usual rules (output.weight to Q6_K as for any 4-bit preset).
// MXFP4_MOE (same number in today's llama.cpp): expert stacks MXFP4, the
// other quantizable weights Q8_0, norms and routers untouched.
TEST(Mix, Mxfp4PresetsAndTheMoeRecipe) {
  std::vector<gguf::TensorInfo> tensors;
  auto add = [&](const std::string& name, std::array<int64_t, 3> ne, uint32_t n_dims) {
    gguf::TensorInfo t;
    t.name = name;
    t.type = TensorType::F32;
    t.n_dims = n_dims;
    t.ne = {ne[0], ne[1], ne[2], 1};
    t.n_elements = static_cast<uint64_t>(ne[0] * ne[1] * ne[2]);
    tensors.push_back(t);
  };
  add("token_embd.weight", {256, 512, 1}, 2);
  add("blk.0.attn_norm.weight", {256, 1, 1}, 1);
  add("blk.0.attn_q.weight", {256, 256, 1}, 2);
  add("blk.0.ffn_gate_inp.weight", {256, 4, 1}, 2);
  add("blk.0.ffn_gate_exps.weight", {256, 128, 4}, 3);
  add("blk.0.ffn_down_exps.weight", {128, 256, 4}, 3);
  add("output.weight", {256, 512, 1}, 2);
  MixModel model;
  model.arch = "gpt-oss";
  model.n_expert = 4;
  const Preset* moe = find_preset("mxfp4_moe");
  const Preset* plain = find_preset("MXFP4");
  ASSERT_NE(moe, nullptr);
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(moe->file_type, 38u);
  EXPECT_EQ(plain->file_type, 38u);
  EXPECT_EQ(find_preset("38"), plain);
  using T = TensorType;
  const std::vector<T> want_moe = {T::Q8_0, T::F32, T::Q8_0, T::F32, T::MXFP4, T::MXFP4, T::Q8_0};
  const std::vector<T> want_plain = {T::MXFP4, T::F32, T::MXFP4, T::F32, T::MXFP4, T::MXFP4, T::Q6_K};
  const auto got_moe = plan_mix(tensors, model, *moe, MixOptions{});
  const auto got_plain = plan_mix(tensors, model, *plain, MixOptions{});
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(tensor_type_name(got_moe[i]), tensor_type_name(want_moe[i])) << tensors[i].name;
    EXPECT_EQ(tensor_type_name(got_plain[i]), tensor_type_name(want_plain[i])) << tensors[i].name;
  }
}

}  // namespace
}  // namespace ferrite::quant
