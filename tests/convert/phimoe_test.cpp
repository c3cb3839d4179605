// The converter's phimoe (PhimoeForCausalLM, Phi-3.5-MoE) beyond the
// fixtures' logits (fixtures_test.cpp): the keys transformers' config sets
// and llama.cpp's converter does not write (router_jitter_noise; the
// LongRoPE magnitude short_mscale in place of LongRoPE's formula), and
// configs ferrite cannot run refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "convert/converter.h"
#include "core/error.h"
#include "gguf/file.h"
#include "gguf/metadata.h"
#include "hf_dir.h"
#include "seeded_checkpoint.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

std::string convert(const std::filesystem::path& dir, const test::TempDir& out) {
  convert::ConvertOptions opt;
  opt.outtype = TensorType::F32;
  opt.vocab.pre_override = "llama-bpe";  // the fixtures' BPE (fixtures_test.cpp)
  const std::string path = out.file("phimoe.gguf");
  convert::convert_checkpoint(dir.string(), path, opt);
  return path;
}

// A copy of a fixture with config.json changed by `edit`.
std::filesystem::path edited(const std::string& name, const test::TempDir& tmp, void (*edit)(test::Json&)) {
  const std::filesystem::path dir = test::seeded_fixture("tiny/" + name, tmp);
  test::Json config = test::Json::parse(test::read_file(dir / "config.json"));
  edit(config);
  test::write_json((dir / "config.json").string(), config);
  return dir;
}

TEST(ConvertPhimoe, WritesRouterJitterAndMscale) {
  test::TempDir tmp;
  {
    const gguf::File f = gguf::File::open(convert(test::seeded_fixture("tiny/phimoe", tmp), tmp));
    const gguf::Metadata md(f);
    EXPECT_EQ(md.opt_float("phimoe.router_jitter_noise"), 0.25f);  // config.json's
    EXPECT_EQ(md.opt_float("phimoe.rope.scaling.attn_factor"), std::nullopt);  // no rope scaling
  }
  {
    const gguf::File f = gguf::File::open(convert(test::seeded_fixture("tiny/phimoe-longrope", tmp), tmp));
    const gguf::Metadata md(f);
    EXPECT_EQ(md.opt_float("phimoe.router_jitter_noise"), 0.01f);
    // short_mscale, not LongRoPE's sqrt(1 + ln(1024 / 256) / ln(256)) = 1.118.
    EXPECT_EQ(md.opt_float("phimoe.rope.scaling.attn_factor"), 1.3f);
  }
}

TEST(ConvertPhimoe, RefusesWhatFerriteCannotRun) {
  struct Bad {
    const char* fixture;
    void (*edit)(test::Json&);
    const char* says;
  };
  const Bad bad[] = {
      {"phimoe-longrope", [](test::Json& c) { c["rope_parameters"]["long_mscale"] = 1.5; }, "long_mscale"},
      {"phimoe-longrope", [](test::Json& c) { c["rope_parameters"].erase("short_mscale"); }, "short_mscale"},
      {"phimoe", [](test::Json& c) { c["router_jitter_noise"] = -0.5; }, "router_jitter_noise"},
  };
  for (const Bad& b : bad) {
    test::TempDir tmp;
    const std::filesystem::path dir = edited(b.fixture, tmp, b.edit);
    try {
      convert(dir, tmp);
      ADD_FAILURE() << b.says << ": converted";
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ferrite
