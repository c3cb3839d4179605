// Our preset mixes give every tensor of synth-llama-f32.gguf the type that
// llama.cpp's quantizer gave it (the golden lists each file's types).
#include <string>

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
