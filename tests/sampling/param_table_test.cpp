// The one table of sampler parameters (sampling/param_table.h) that the
// command line, the server and the Python binding read: names and flags are
// unique and llama.cpp's, every row sets its own field, values outside a
// row's range are refused with the field's name, text is read as the command
// line writes it.
#include "sampling/param_table.h"

#include <cmath>
#include <limits>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"

namespace ferrite::sampling {
namespace {

TEST(ParamTable, NamesAndFlagsAreUniqueAndLlamaCpps) {
  std::set<std::string> names, flags;
  for (const ParamSpec& s : param_table()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    std::string f = s.flags;
    for (size_t at = 0; at <= f.size();) {
      size_t end = f.find(',', at);
      if (end == std::string::npos) end = f.size();
      std::string one = f.substr(at, end - at);
      if (!one.empty() && one[0] == '!') one.erase(0, 1);
      EXPECT_TRUE(flags.insert(one).second) << one;
      at = end + 1;
    }
  }
  // llama.cpp's spellings (common/arg.cpp) and server field names (examples/server).
  for (const char* f : {"--temp", "--top-k", "--top-p", "--min-p", "--top-nsigma", "--xtc-probability",
                        "--xtc-threshold", "--typical", "--repeat-last-n", "--repeat-penalty", "--presence-penalty",
                        "--frequency-penalty", "--dry-multiplier", "--dry-base", "--dry-allowed-length",
                        "--dry-penalty-last-n", "--dry-sequence-breaker", "--dynatemp-range", "--dynatemp-exp",
                        "--mirostat", "--mirostat-lr", "--mirostat-ent", "--seed", "--samplers", "--sampling-seq",
                        "--logit-bias", "--min-keep"}) {
    EXPECT_TRUE(flags.count(f)) << f;
  }
  for (const char* n : {"temperature", "top_k", "top_p", "min_p", "typical_p", "xtc_probability", "xtc_threshold",
                        "repeat_last_n", "repeat_penalty", "presence_penalty", "frequency_penalty", "dry_multiplier",
                        "dry_base", "dry_allowed_length", "dry_penalty_last_n", "dry_sequence_breakers",
                        "dynatemp_range", "dynatemp_exponent", "mirostat", "mirostat_tau", "mirostat_eta", "seed",
                        "min_keep", "samplers", "logit_bias"}) {
    EXPECT_NE(find_param(n), nullptr) << n;
  }
}

// Each number row, set to a value inside its range that is not its default,
// changes its own field and nothing else; below its range it is refused.
TEST(ParamTable, EveryNumberRowSetsItsFieldWithinItsRange) {
  const SamplerParams defaults;
  for (const ParamSpec& s : param_table()) {
    if (s.kind != ParamKind::Float && s.kind != ParamKind::Int) continue;
    SCOPED_TRACE(s.name);
    SamplerParams p;
    const std::string before = param_text(p, s);
    const double v = s.kind == ParamKind::Int ? std::floor((s.lo + s.hi) / 2) : (s.lo + s.hi) / 2;
    set_param(p, s, v == std::stod(before) ? ParamValue(s.hi) : ParamValue(v));
    EXPECT_NE(param_text(p, s), before);
    for (const ParamSpec& other : param_table()) {
      if (&other != &s) {
        EXPECT_EQ(param_text(p, other), param_text(defaults, other)) << other.name;
      }
    }
    try {
      set_param(p, s, s.lo - 1);
      ADD_FAILURE() << "below the range, accepted";
    } catch (const InvalidField& e) {
      EXPECT_EQ(e.field(), s.name);
      EXPECT_NE(std::string(e.what()).find(range_text(s)), std::string::npos) << e.what();
    }
    EXPECT_THROW(set_param(p, s, std::numeric_limits<double>::quiet_NaN()), InvalidField);
  }
}

TEST(ParamTable, TextIsReadAsTheCommandLineWritesIt) {
  SamplerParams p;
  set_param(p, *find_param("temperature"), std::string("0.25"));
  EXPECT_FLOAT_EQ(p.temperature, 0.25f);
  set_param(p, *find_param("top_k"), std::string("7"));
  EXPECT_EQ(p.top_k, 7);
  EXPECT_THROW(set_param(p, *find_param("top_k"), std::string("7.5")), InvalidField);
  EXPECT_THROW(set_param(p, *find_param("top_k"), std::string("lots")), InvalidField);
  set_param(p, *find_param("seed"), std::string("-1"));
  EXPECT_EQ(p.seed, kRandomSeed);
  set_param(p, *find_param("seed"), int64_t{12});
  EXPECT_EQ(p.seed, 12u);
  set_param(p, *find_param("samplers"), std::string("top_k;temperature"));
  EXPECT_EQ(p.samplers, (std::vector<Stage>{Stage::TopK, Stage::Temperature}));
  set_param(p, *find_param("samplers"), std::vector<std::string>{"min_p", "temp"});
  EXPECT_EQ(p.samplers, (std::vector<Stage>{Stage::MinP, Stage::Temperature}));
  set_param(p, *find_param("sampling_seq"), std::string("kt"));
  EXPECT_EQ(p.samplers, (std::vector<Stage>{Stage::TopK, Stage::Temperature}));
  set_param(p, *find_param("penalize_nl"), false);
  EXPECT_FALSE(p.penalize_nl);
}

TEST(ParamTable, LogitBiasAndBreakers) {
  SamplerParams p;
  const ParamSpec& lb = *find_param("logit_bias");
  set_param(p, lb, std::string("15+1"));
  set_param(p, lb, std::string("16-inf"));
  ASSERT_EQ(p.logit_bias.size(), 2u);  // command-line entries add up
  EXPECT_EQ(p.logit_bias[1].bias, -std::numeric_limits<float>::infinity());
  set_param(p, lb, std::vector<LogitBias>{{3, -100.0f}, {4, 2.5f}});
  ASSERT_EQ(p.logit_bias.size(), 2u);  // a list replaces them
  EXPECT_EQ(p.logit_bias[0].bias, -std::numeric_limits<float>::infinity());  // -100 bans (OpenAI)
  EXPECT_EQ(p.logit_bias[1].bias, 2.5f);
  EXPECT_THROW(set_param(p, lb, std::vector<LogitBias>{{3, 1000.0f}}), InvalidField);
  EXPECT_THROW(set_param(p, lb, std::vector<LogitBias>{{-1, 1.0f}}), InvalidField);
  const ParamSpec& br = *find_param("dry_sequence_breakers");
  set_param(p, br, std::vector<std::string>{"x", "none", "y"});
  EXPECT_EQ(p.dry_sequence_breakers, std::vector<std::string>{"y"});
  set_param(p, br, std::string("none"));
  EXPECT_TRUE(p.dry_sequence_breakers.empty());
  EXPECT_THROW(set_param(p, br, int64_t{5}), InvalidField);
}

}  // namespace
}  // namespace ferrite::sampling
