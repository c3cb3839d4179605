// Parsing of the command-line forms and validation of the parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "sampling/params.h"

namespace ferrite::sampling {
namespace {

TEST(SamplerParams, LlamaCppDefaults) {
  const SamplerParams p;
  EXPECT_FLOAT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.top_p, 0.95f);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_FLOAT_EQ(p.typical_p, 1.0f);
  EXPECT_FLOAT_EQ(p.xtc_threshold, 0.1f);
  EXPECT_EQ(p.penalty_last_n, 64);
  EXPECT_EQ(p.mirostat, 0);
  EXPECT_EQ(p.seed, kRandomSeed);
  EXPECT_EQ(p.dry_sequence_breakers, (std::vector<std::string>{"\n", ":", "\"", "*"}));
  std::string order;
  for (Stage s : p.samplers) order += stage_char(s);
  EXPECT_EQ(order, "edskypmxt");
  EXPECT_NO_THROW(validate(p));
}

TEST(StageNames, CanonicalAlternativeAndChars) {
  EXPECT_EQ(parse_stage_names("top_k;top_p;temperature"),
            (std::vector<Stage>{Stage::TopK, Stage::TopP, Stage::Temperature}));
  EXPECT_EQ(parse_stage_names("nucleus;typical;min-p;temp;top-n-sigma;;"),
            (std::vector<Stage>{Stage::TopP, Stage::TypicalP, Stage::MinP, Stage::Temperature, Stage::TopNSigma}));
  EXPECT_EQ(parse_stage_chars("edskypmxt"), default_stage_order());
  EXPECT_TRUE(parse_stage_names("").empty());
  EXPECT_THROW(parse_stage_names("top_k;bogus"), InvalidArgument);
  EXPECT_THROW(parse_stage_chars("kz"), InvalidArgument);
  for (Stage s : default_stage_order()) EXPECT_EQ(stage_from_name(stage_name(s)), s);
}

TEST(LogitBiasParse, Forms) {
  LogitBias b = parse_logit_bias("15043+1");
  EXPECT_EQ(b.token, 15043);
  EXPECT_FLOAT_EQ(b.bias, 1.0f);
  b = parse_logit_bias("15043-1.5");
  EXPECT_FLOAT_EQ(b.bias, -1.5f);
  b = parse_logit_bias("2-inf");
  EXPECT_EQ(b.bias, -std::numeric_limits<float>::infinity());
  for (const char* bad : {"", "abc", "12", "12*3", "+1", "12+", "12+abc", "12++1", "12+1x", "99999999999+1",
                          "12+nan", "-3+1", "12+ 1"}) {
    EXPECT_THROW(parse_logit_bias(bad), InvalidArgument) << bad;
  }
}

TEST(SeedParse, Forms) {
  EXPECT_EQ(parse_seed("-1"), kRandomSeed);
  EXPECT_EQ(parse_seed("0"), 0u);
  EXPECT_EQ(parse_seed("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"", "-2", "x", "12x", "18446744073709551616", " 5"}) {
    EXPECT_THROW(parse_seed(bad), InvalidArgument) << bad;
  }
}

TEST(SamplerParams, ValidationRejectsNonsense) {
  auto bad = [](auto mutate) {
    SamplerParams p;
    mutate(p);
    EXPECT_THROW(validate(p), InvalidArgument);
  };
  bad([](SamplerParams& p) { p.temperature = std::nanf(""); });
  bad([](SamplerParams& p) { p.top_p = std::nanf(""); });
  bad([](SamplerParams& p) { p.mirostat = 3; });
  bad([](SamplerParams& p) { p.penalty_last_n = -2; });
  bad([](SamplerParams& p) { p.dry_penalty_last_n = -5; });
  bad([](SamplerParams& p) { p.min_keep = -1; });
  bad([](SamplerParams& p) { p.dry_base = 0.5f; });
  bad([](SamplerParams& p) { p.dry_allowed_length = -1; });
  bad([](SamplerParams& p) { p.logit_bias = {{-1, 1.0f}}; });
  SamplerParams ok;
  ok.penalty_last_n = -1;
  ok.top_p = 0.0f;
  ok.temperature = -1.0f;
  EXPECT_NO_THROW(validate(ok));
}

}  // namespace
}  // namespace ferrite::sampling
