// What the gpt-oss, t5 and BERT-reranker converters refuse (variants the
// engine would run wrongly) and what they note: a copy of the tiny
// transformers checkpoint (fixtures/tiny/<arch>) with config.json changed one
// way at a time must fail with an error naming the key, never convert.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "convert/converter.h"
#include "core/error.h"
#include "hf_dir.h"
#include "seeded_checkpoint.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

using test::Json;

struct Outcome {
  std::string error;  // "" when it converted
  std::vector<std::string> notes;
};

// Converts fixtures/tiny/<arch> after `edit` changed its config.json.
Outcome convert_edited(const char* arch, const std::function<void(Json&)>& edit) {
  test::TempDir tmp;
  const std::filesystem::path dir = test::seeded_fixture(std::string("tiny/") + arch, tmp);
  Json cfg = Json::parse(test::read_file(dir / "config.json"));
  edit(cfg);
  test::write_json((dir / "config.json").string(), cfg);
  convert::ConvertOptions opt;
  opt.vocab.pre_override = "llama-bpe";  // the tiny BPE is in no row of llama.cpp's table
  try {
    const convert::ConvertPlan plan = convert::convert_checkpoint(dir.string(), tmp.file("out.gguf"), opt);
    return {"", plan.notes};
  } catch (const Error& e) {
    return {e.what(), {}};
  }
}

void expect_refused(const char* arch, const std::function<void(Json&)>& edit, const std::string& says) {
  const Outcome o = convert_edited(arch, edit);
  EXPECT_NE(o.error.find(says), std::string::npos) << arch << ": the error should say '" << says << "'; got: '"
                                                   << o.error << "'";
}

bool has_note(const Outcome& o, const std::string& part) {
  for (const std::string& n : o.notes) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(FamilyRefusals, GptOss) {
  const Outcome good = convert_edited("gpt_oss", [](Json&) {});
  EXPECT_EQ(good.error, "");
  expect_refused("gpt_oss", [](Json& c) { c["rope_parameters"]["truncate"] = "no"; }, "truncate");
  expect_refused("gpt_oss", [](Json& c) { c["quantization_config"] = {{"quant_method", "mxfp4"}}; }, "MXFP4");
  expect_refused("gpt_oss", [](Json& c) { c["swiglu_limit"] = 10.0; }, "swiglu_limit");
  expect_refused("gpt_oss", [](Json& c) { c["layer_types"] = {"full_attention", "sliding_attention"}; },
                 "layer_types[0]");
  expect_refused("gpt_oss", [](Json& c) { c["layer_types"] = {"sliding_attention"}; }, "layer_types");
  expect_refused("gpt_oss", [](Json& c) { c["rope_parameters"]["rope_type"] = "linear"; }, "yarn");
  expect_refused("gpt_oss", [](Json& c) { c["intermediate_size"] = 48; }, "intermediate_size");
}

TEST(FamilyRefusals, T5) {
  const Outcome good = convert_edited("t5", [](Json&) {});
  EXPECT_EQ(good.error, "");
  EXPECT_TRUE(has_note(good, "d_model^-0.5"));
  EXPECT_FALSE(has_note(convert_edited("t5-gated", [](Json&) {}), "d_model^-0.5"));
  expect_refused("t5", [](Json& c) { c["relative_attention_max_distance"] = 64; }, "relative_attention_max_distance");
  expect_refused("t5", [](Json& c) { c["num_decoder_layers"] = 3; }, "num_decoder_layers");
  expect_refused("t5", [](Json& c) { c["feed_forward_proj"] = "gelu"; c["dense_act_fn"] = "gelu"; }, "feed_forward_proj");
  expect_refused("t5-gated", [](Json& c) { c["feed_forward_proj"] = "gated-silu"; c["dense_act_fn"] = "silu"; },
                 "gated-silu");
  expect_refused("t5", [](Json& c) { c["d_kv"] = 4; }, "head_dim");
}

TEST(FamilyRefusals, BertReranker) {
  EXPECT_EQ(convert_edited("bert-reranker", [](Json&) {}).error, "");
  expect_refused("bert-reranker", [](Json& c) { c["id2label"] = {{"0", "NO"}, {"1", "YES"}}; }, "2 labels");
}

}  // namespace
}  // namespace ferrite
