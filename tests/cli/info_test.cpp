// `ferrite info`: tensor names, types and shapes equal llama.cpp's (as listed
// in the dequantization golden), and the parameter count of stories260K
// equals the one in shared/README.md.
#include <tuple>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"

namespace {

using ferrite::test::run_ferrite;
using nlohmann::json;

TEST(CliInfo, Stories260KParameterCount) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"info", "--json", model.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  // From shared/README.md: "292,800 parameters, 5 layers, dim 64".
  EXPECT_EQ(j["n_params"].get<uint64_t>(), 292800u);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["hparams"]["block_count"], 5);
  EXPECT_EQ(j["hparams"]["embedding_length"], 64);
  EXPECT_EQ(j["hparams"]["head_count"], 8);
  EXPECT_EQ(j["hparams"]["head_count_kv"], 4);
  EXPECT_EQ(j["tokenizer"]["n_tokens"], 512);
}

// The KV cache figure counts 4 bytes a value for f32 and 2 for bf16 (and
// f16): stories260K has 5 layers of 4 KV heads of 8 (32 values per cell).
// An unknown cache type is a usage error, not a missing figure.
TEST(CliInfo, KvCacheFigureOfEachType) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  for (auto [k, v, per_value] : {std::tuple{"f16", "f16", 4}, std::tuple{"f32", "f32", 8},
                                 std::tuple{"f32", "bf16", 6}, std::tuple{"bf16", "bf16", 4}}) {
    const auto r = run_ferrite({"info", "--json", "-c", "256", "-ctk", k, "-ctv", v, model.string()});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["kv_cache"]["bytes"].get<int64_t>(), 5 * 256 * 32 * per_value) << k << "/" << v;
  }
  const auto bad = run_ferrite({"info", "-ctk", "q4_k", model.string()});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("q4_k"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
}

TEST(CliInfo, SynthLlamaTensorsMatchGolden) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  const json golden = json::parse(ferrite::test::read_file(golden_path));
  ASSERT_EQ(golden.size(), 29u);  // the 29 quantized variants listed in shared/README.md
  for (const auto& [type_name, tensors] : golden.items()) {
    SCOPED_TRACE(type_name);
    FERRITE_SHARED_FILE(model, "models/synth/synth-llama-" + type_name + ".gguf");
    const auto r = run_ferrite({"info", "--json", model.string()});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out);
    ASSERT_EQ(j["tensors"].size(), tensors.size());
    for (const auto& t : j["tensors"]) {
      const std::string name = t["name"];
      ASSERT_TRUE(tensors.contains(name)) << name;
      const json& g = tensors[name];
      EXPECT_EQ(t["type"], g["type"]) << name;
      // The golden lists three dimensions, ours only the stored ones.
      std::vector<int64_t> ne = t["ne"];
      while (ne.size() < 3) ne.push_back(1);
      EXPECT_EQ(ne, g["ne"].get<std::vector<int64_t>>()) << name;
    }
  }
}

TEST(CliInfo, JsonShowsTheRunTimeSwitches) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"info", "--json", model.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_TRUE(j.contains("switches")) << r.out;
  for (const char* name : {"FERRITE_REPACK", "FERRITE_REPACK_FLOAT", "FERRITE_REPACK_Q6K", "FERRITE_AMX",
                           "FERRITE_CUDA_EXACT", "FERRITE_CUDA_GRAPHS", "FERRITE_CUDA_FUSE", "FERRITE_CUDA_PDL",
                           "FERRITE_CUDA_ATTN_WARPS", "FERRITE_CUDA_MMA_ROWS"}) {
    EXPECT_TRUE(j["switches"].contains(name)) << name;
  }
}

TEST(CliInfo, MissingFileIsAnErrorNotACrash) {
  const auto r = run_ferrite({"info", "/nonexistent/model.gguf"});
  EXPECT_NE(r.status, 0);
  EXPECT_LT(r.status, 128) << "killed by a signal";
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
}

TEST(CliInfo, NonGgufFileNamesTheProblem) {
  FERRITE_SHARED_FILE(text, "text/war-and-peace.txt");
  const auto r = run_ferrite({"info", text.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("magic"), std::string::npos) << r.err;
}

TEST(CliInfo, UnknownOptionIsAUsageError) {
  const auto r = run_ferrite({"info", "--no-such-option", "x"});
  EXPECT_NE(r.status, 0);
  EXPECT_LT(r.status, 128);
}

}  // namespace
