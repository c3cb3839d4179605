// Every tensor of every synth-llama-<TYPE>.gguf (quantized by llama.cpp),
// dequantized by our reference kernels and by the runtime's fast path, must
// hash (SHA-256 of the little-endian float32 output) to the golden's value.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/sha256.h"
#include "gguf/file.h"
#include "quant/dequantize.h"
#include "support/test_data.h"

namespace ferrite::quant {
namespace {

// SHA-256 of the whole tensor dequantized row by row.
std::string tensor_sha(const gguf::TensorInfo& t, bool reference) {
  const int64_t n_per_row = t.ne[0];
  const uint64_t n_rows = t.n_elements / static_cast<uint64_t>(n_per_row);
  const uint64_t row_bytes = t.row_bytes();
  std::vector<float> row(static_cast<size_t>(n_per_row));
  Sha256 sha;
  for (uint64_t r = 0; r < n_rows; ++r) {
    const uint8_t* src = t.data + r * row_bytes;
    if (reference) {
      dequantize_row_ref(t.type, src, row.data(), n_per_row);
    } else {
      dequantize_row(t.type, src, row.data(), n_per_row);
    }
    sha.update(row.data(), row.size() * sizeof(float));
  }
  return sha.hex_digest();
}

const nlohmann::json& golden_json(const std::filesystem::path& path) {
  static const nlohmann::json j = nlohmann::json::parse(test::read_file(path));
  return j;
}

void check_file(const std::string& type_name, bool reference) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  const nlohmann::json& golden = golden_json(golden_path);
  ASSERT_TRUE(golden.contains(type_name)) << type_name;
  FERRITE_SHARED_FILE(model_path, "models/synth/synth-llama-" + type_name + ".gguf");
  const gguf::File file = gguf::File::open(model_path.string());
  const auto& expected = golden.at(type_name);
  ASSERT_EQ(expected.size(), file.tensors().size());
  for (const auto& t : file.tensors()) {
    ASSERT_TRUE(expected.contains(t.name)) << t.name;
    const auto& e = expected.at(t.name);
    EXPECT_EQ(e.at("type").get<std::string>(), tensor_type_name(t.type)) << t.name;
    EXPECT_EQ(e.at("sha256_f32").get<std::string>(), tensor_sha(t, reference))
        << type_name << " " << t.name << " (" << tensor_type_name(t.type) << ")";
  }
}

// The reference kernels run in every build; the fast paths (also checked
// bit-exact against the reference on random blocks in dequant_simd_test)
// are checked on the golden files only outside the sanitizer run.
class DequantGolden : public ::testing::TestWithParam<std::string> {};
class DequantGoldenSlow : public ::testing::TestWithParam<std::string> {};

TEST_P(DequantGolden, ReferenceMatchesLlamaCpp) { check_file(GetParam(), true); }
TEST_P(DequantGoldenSlow, FastPathMatchesLlamaCpp) { check_file(GetParam(), false); }

const std::vector<std::string> kGoldenFiles = {
    "F16",    "BF16",   "Q4_0",   "Q4_1",    "Q5_0",   "Q5_1",  "Q8_0",  "Q2_K",  "Q3_K_S", "Q3_K_M",
    "Q3_K_L", "Q4_K_S", "Q4_K_M", "Q5_K_S",  "Q5_K_M", "Q6_K",  "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS",
    "IQ2_S",  "IQ2_M",  "IQ3_XXS", "IQ3_S",  "IQ3_M",  "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0"};

INSTANTIATE_TEST_SUITE_P(AllFiles, DequantGolden, ::testing::ValuesIn(kGoldenFiles));
INSTANTIATE_TEST_SUITE_P(AllFiles, DequantGoldenSlow, ::testing::ValuesIn(kGoldenFiles));

TEST(DequantGoldenCoverage, EveryFileInTheGoldenIsTested) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  const nlohmann::json golden = nlohmann::json::parse(test::read_file(golden_path));
  for (const auto& [name, _] : golden.items()) {
    EXPECT_NE(std::find(kGoldenFiles.begin(), kGoldenFiles.end(), name), kGoldenFiles.end()) << name;
  }
}

TEST(Dequantize, RejectsPartialBlocks) {
  std::vector<uint8_t> src(64);
  std::vector<float> dst(64);
  EXPECT_THROW(dequantize_row(TensorType::Q4_0, src.data(), dst.data(), 31), InvalidArgument);
  EXPECT_THROW(dequantize_row(TensorType::I32, src.data(), dst.data(), 4), InvalidArgument);
}

}  // namespace
}  // namespace ferrite::quant
