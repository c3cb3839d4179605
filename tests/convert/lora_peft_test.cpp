// `ferrite convert --lora`'s reader (convert/lora_peft.h) on PEFT adapter
// folders written here for stories260K (llama: 8 query heads, 4 KV heads of
// 8): names mapped to llama.cpp's, lora_A kept, lora_B of Q and K rows
// reordered as llama.cpp's converter reorders the base Q and K rows (its
// permute written out again below), alpha as given (rslora: alpha sqrt r),
// and the folder's mistakes as clear errors. The written file loads as an
// adapter of the model.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/lora_peft.h"
#include "core/error.h"
#include "gguf/file.h"
#include "hf_dir.h"
#include "model/lora_adapter.h"
#include "model/model.h"
#include "support/temp_dir.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr int64_t kPeftEmbd = 64, kPeftKv = 32, kRank = 2;
const std::string kLayer = "base_model.model.model.layers.0.self_attn.";

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * static_cast<float>((i * 37) % 101 - 50);
  return v;
}

// llama.cpp's permute of Q/K rows: rows [heads][2][half] -> [heads][half][2].
std::vector<float> llama_permute(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads) {
  std::vector<float> out(w.size());
  const int64_t half = rows / heads / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t j = 0; j < 2; ++j) {
        for (int64_t c = 0; c < cols; ++c) {
          out[static_cast<size_t>(((h * half + i) * 2 + j) * cols + c)] =
              w[static_cast<size_t>(((h * 2 + j) * half + i) * cols + c)];
        }
      }
    }
  }
  return out;
}

class PeftLora : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
    base_ = model.string();
  }
  void write(const test::Json& config, const std::vector<test::StEntry>& tensors) {
    test::write_json(dir_.file("adapter_config.json"), config);
    test::write_bytes(dir_.file("adapter_model.safetensors"), test::safetensors_bytes(tensors));
  }
  std::vector<test::StEntry> qkv() const {
    return {test::st_f32(kLayer + "q_proj.lora_A.weight", {kRank, kPeftEmbd}, a_),
            test::st_f32(kLayer + "q_proj.lora_B.weight", {kPeftEmbd, kRank}, bq_),
            test::st_f32(kLayer + "k_proj.lora_A.weight", {kRank, kPeftEmbd}, a_),
            test::st_f32(kLayer + "k_proj.lora_B.weight", {kPeftKv, kRank}, bk_),
            test::st_f32(kLayer + "v_proj.lora_A.weight", {kRank, kPeftEmbd}, a_),
            test::st_f32(kLayer + "v_proj.lora_B.weight", {kPeftKv, kRank}, bk_)};
  }
  static test::Json config(double alpha = 16.0) {
    return {{"peft_type", "LORA"}, {"r", kRank}, {"lora_alpha", alpha}, {"target_modules", {"q_proj", "k_proj", "v_proj"}}};
  }
  void expect_error(const std::string& phrase) {
    try {
      convert::read_peft_lora(dir_.path().string(), base_);
      ADD_FAILURE() << "converted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  }

  test::TempDir dir_{"peft"};
  std::string base_;
  std::vector<float> a_ = ramp(kRank * kPeftEmbd, 0.01f), bq_ = ramp(kPeftEmbd * kRank, 0.02f), bk_ = ramp(kPeftKv * kRank, 0.03f);
};

TEST_F(PeftLora, NamesPermutationAndAlpha) {
  write(config(), qkv());
  const convert::LoraFile f = convert::read_peft_lora(dir_.path().string(), base_);
  EXPECT_EQ(f.arch, "llama");
  EXPECT_EQ(f.alpha, 16.0f);
  ASSERT_EQ(f.pairs.size(), 3u);
  for (const convert::LoraPair& p : f.pairs) {
    SCOPED_TRACE(p.base);
    EXPECT_EQ(p.rank, kRank);
    EXPECT_EQ(p.a, a_);
    if (p.base == "blk.0.attn_q.weight") {
      EXPECT_EQ(p.b, llama_permute(bq_, kPeftEmbd, kRank, 8));
    } else if (p.base == "blk.0.attn_k.weight") {
      EXPECT_EQ(p.b, llama_permute(bk_, kPeftKv, kRank, 4));
    } else {
      EXPECT_EQ(p.base, "blk.0.attn_v.weight");
      EXPECT_EQ(p.b, bk_);  // V is not reordered
    }
  }
  EXPECT_NE(llama_permute(bq_, kPeftEmbd, kRank, 8), bq_);  // the check above sees a missing permutation
  // The file written loads as the model's adapter.
  const std::string out = dir_.file("out.gguf");
  convert::convert_peft_lora(dir_.path().string(), base_, out, TensorType::F32);
  const auto model = model::Model::load(base_);
  EXPECT_EQ(model::LoraAdapter::load(out, *model)->weights().size(), 3u);
}

TEST_F(PeftLora, RsLoraAlpha) {
  test::Json c = config(8.0);
  c["use_rslora"] = true;
  write(c, qkv());
  EXPECT_FLOAT_EQ(convert::read_peft_lora(dir_.path().string(), base_).alpha, 8.0f * std::sqrt(2.0f));
}

TEST_F(PeftLora, MistakesAreClearErrors) {
  auto entries = qkv();
  entries.pop_back();  // v_proj without lora_B
  write(config(), entries);
  expect_error("has lora_A but not lora_B");

  entries = qkv();
  entries.push_back(test::st_f32(kLayer + "rotary.lora_A.weight", {kRank, kPeftEmbd}, a_));
  write(config(), entries);
  expect_error("cannot map");

  entries = qkv();
  entries[0] = test::st_f32(kLayer + "q_proj.lora_A.weight", {kRank, kPeftEmbd - 1}, ramp(kRank * (kPeftEmbd - 1), 0.01f));
  write(config(), entries);
  expect_error("expected [r, 64]");

  entries = qkv();
  entries.push_back(test::st_f32("base_model.model.model.layers.9.self_attn.q_proj.lora_A.weight", {kRank, kPeftEmbd}, a_));
  entries.push_back(test::st_f32("base_model.model.model.layers.9.self_attn.q_proj.lora_B.weight", {kPeftEmbd, kRank}, bq_));
  write(config(), entries);
  expect_error("not in the base model");

  entries = qkv();
  entries.push_back(test::st_f32("base_model.model.model.embed_tokens.lora_embedding_A", {kRank, 512}, ramp(kRank * 512, 0.1f)));
  write(config(), entries);
  expect_error("token embeddings");

  test::Json c = config();
  c["rank_pattern"] = {{"q_proj", 4}};
  write(c, qkv());
  expect_error("rank_pattern");

  c = config();
  c.erase("lora_alpha");
  write(c, qkv());
  expect_error("lora_alpha");
}

}  // namespace
}  // namespace ferrite
