// `ferrite quantize` and `ferrite synth` end to end: the tensor types of a
// preset equal those llama.cpp chose for it (the dequantization golden), the
// dequantized weights are within llama.cpp's RMSE of the f32 original, the
// IQ1/IQ2 presets refuse to run without an importance matrix, and a synth
// model has the shapes of its preset (as the issue defines llama-1b).
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_util.h"
#include "gguf/file.h"
#include "quant/dequantize.h"
#include "support/test_data.h"

namespace {

namespace fs = std::filesystem;
using ferrite::test::run_ferrite;
using nlohmann::json;

// A fresh folder under the system temp dir, removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("ferrite-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// RMSE of a (quantized) tensor against the f32 original of the same name.
double rmse_vs(const ferrite::gguf::TensorInfo& q, const ferrite::gguf::TensorInfo& f32) {
  const int64_t n_per_row = q.ne[0];
  const int64_t n_rows = static_cast<int64_t>(q.n_elements) / n_per_row;
  const auto* ref = reinterpret_cast<const float*>(f32.data);
  std::vector<float> row(static_cast<size_t>(n_per_row));
  double sum = 0.0;
  for (int64_t r = 0; r < n_rows; ++r) {
    ferrite::quant::dequantize_row_ref(q.type, q.data + static_cast<uint64_t>(r) * q.row_bytes(), row.data(),
                                       n_per_row);
    for (int64_t i = 0; i < n_per_row; ++i) {
      const double d = static_cast<double>(row[static_cast<size_t>(i)]) - ref[r * n_per_row + i];
      sum += d * d;
    }
  }
  return std::sqrt(sum / static_cast<double>(q.n_elements));
}

// Quantizes synth-llama-f32 to `preset` with the golden imatrix and checks
// types and RMSE against the golden's file of that preset.
void check_preset(const std::string& preset) {
  SCOPED_TRACE(preset);
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(imatrix_path, "golden/synth-llama.imatrix");
  const json golden = json::parse(ferrite::test::read_file(golden_path)).at(preset);
  TempDir dir("quantize");
  const fs::path out = dir / (preset + ".gguf");
  const auto r = run_ferrite({"quantize", f32_path.string(), out.string(), preset, "--imatrix",
                              imatrix_path.string(), "--threads", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto f32 = ferrite::gguf::File::open(f32_path.string());
  const auto q = ferrite::gguf::File::open(out.string());
  ASSERT_EQ(q.tensors().size(), golden.size());
  for (const auto& t : q.tensors()) {
    ASSERT_TRUE(golden.contains(t.name)) << t.name;
    const json& g = golden.at(t.name);
    EXPECT_EQ(ferrite::tensor_type_name(t.type), g.at("type").get<std::string>()) << t.name;
    const double bar = g.at("rmse_vs_f32").get<double>();
    EXPECT_LE(rmse_vs(t, f32.tensor(t.name)), bar) << t.name;
  }
}

TEST(CliQuantize, Q4KMTypesAndRmseMatchGolden) { check_preset("Q4_K_M"); }

TEST(CliQuantizeSlow, IqPresetsTypesAndRmseMatchGolden) {
  check_preset("IQ2_XS");
  check_preset("IQ3_XXS");
}

TEST(CliQuantize, TwoBitIqPresetRefusesWithoutImatrix) {
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  TempDir dir("quantize-noim");
  const auto r = run_ferrite({"quantize", f32_path.string(), (dir / "out.gguf").string(), "iq2_xxs"});
  EXPECT_NE(r.status, 0);
  EXPECT_LT(r.status, 128) << "killed by a signal";
  EXPECT_NE(r.err.find("importance matrix"), std::string::npos) << r.err;
}

TEST(CliQuantize, UnknownPresetIsAnError) {
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  TempDir dir("quantize-bad");
  const auto r = run_ferrite({"quantize", f32_path.string(), (dir / "out.gguf").string(), "Q9_Z"});
  EXPECT_NE(r.status, 0);
  EXPECT_LT(r.status, 128) << "killed by a signal";
  EXPECT_NE(r.err.find("unknown quantization type"), std::string::npos) << r.err;
}

TEST(CliSynthSlow, Llama1bShapesMatchThePreset) {
  FERRITE_SHARED_FILE(vocab_path, "vocab/ggml-vocab-llama-spm.gguf");
  TempDir dir("synth");
  const fs::path out = dir / "llama-1b.gguf";
  const auto r = run_ferrite({"synth", "--preset", "llama-1b", "--type", "Q2_K", "--vocab", vocab_path.string(), "-o",
                              out.string(), "--threads", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto vocab = ferrite::gguf::File::open(vocab_path.string());
  const auto n_vocab = static_cast<int64_t>(vocab.get("tokenizer.ggml.tokens").size());
  const auto f = ferrite::gguf::File::open(out.string());
  // llama-1b as the issue defines it: 2048 wide, 22 layers, 5632 ff,
  // 32 heads, 4 KV heads (so K/V are 4 * 2048 / 32 = 256 wide).
  constexpr int64_t kEmbd = 2048, kLayers = 22, kFf = 5632, kHeads = 32, kKvHeads = 4;
  constexpr int64_t kKv = kKvHeads * kEmbd / kHeads;
  auto shape = [&](const std::string& name) {
    const auto& t = f.tensor(name);
    return std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims);
  };
  EXPECT_EQ(shape("token_embd.weight"), (std::vector<int64_t>{kEmbd, n_vocab}));
  EXPECT_EQ(shape("output.weight"), (std::vector<int64_t>{kEmbd, n_vocab}));
  EXPECT_EQ(shape("output_norm.weight"), (std::vector<int64_t>{kEmbd}));
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(shape(p + "attn_norm.weight"), (std::vector<int64_t>{kEmbd}));
    EXPECT_EQ(shape(p + "attn_q.weight"), (std::vector<int64_t>{kEmbd, kEmbd}));
    EXPECT_EQ(shape(p + "attn_k.weight"), (std::vector<int64_t>{kEmbd, kKv}));
    EXPECT_EQ(shape(p + "attn_v.weight"), (std::vector<int64_t>{kEmbd, kKv}));
    EXPECT_EQ(shape(p + "attn_output.weight"), (std::vector<int64_t>{kEmbd, kEmbd}));
    EXPECT_EQ(shape(p + "ffn_norm.weight"), (std::vector<int64_t>{kEmbd}));
    EXPECT_EQ(shape(p + "ffn_gate.weight"), (std::vector<int64_t>{kEmbd, kFf}));
    EXPECT_EQ(shape(p + "ffn_up.weight"), (std::vector<int64_t>{kEmbd, kFf}));
    EXPECT_EQ(shape(p + "ffn_down.weight"), (std::vector<int64_t>{kFf, kEmbd}));
  }
  EXPECT_EQ(f.find_tensor("blk.22.attn_q.weight"), nullptr);
  EXPECT_EQ(f.get("llama.block_count").as_int(), kLayers);
  EXPECT_EQ(f.get("llama.embedding_length").as_int(), kEmbd);
  EXPECT_EQ(f.get("llama.feed_forward_length").as_int(), kFf);
  EXPECT_EQ(f.get("llama.attention.head_count").as_int(), kHeads);
  EXPECT_EQ(f.get("llama.attention.head_count_kv").as_int(), kKvHeads);
}

}  // namespace
