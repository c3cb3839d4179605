// `ferrite run --json-schema / --grammar`: constrained generation on the synth
// models gives output that parses and satisfies the schema for many seeds.
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"

namespace {

using ferrite::test::run_ferrite;

constexpr int kSeeds = 12;

TEST(CliRunGrammar, JsonSchemaOutputValidatesForManySeeds) {
  FERRITE_SHARED_FILE(model, "models/synth/synth-llama-Q4_0.gguf");
  const std::string schema =
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":12},)"
      R"("tags":{"type":"array","items":{"type":"integer"},"maxItems":3},"ok":{"type":"boolean"}},)"
      R"("required":["name","tags","ok"]})";
  for (int seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto r = run_ferrite({"run", "-m", model.string(), "-p", "Data:", "-n", "400", "--seed",
                                std::to_string(seed), "-t", "1", "--json-schema", schema});
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);  // throws (fails the test) when not JSON
    ASSERT_TRUE(j.is_object());
    ASSERT_TRUE(j.contains("name") && j["name"].is_string());
    EXPECT_LE(j["name"].get<std::string>().size(), 12u * 4);  // at most 12 code points of up to 4 bytes
    ASSERT_TRUE(j.contains("tags") && j["tags"].is_array());
    EXPECT_LE(j["tags"].size(), 3u);
    for (const auto& t : j["tags"]) EXPECT_TRUE(t.is_number_integer());
    ASSERT_TRUE(j.contains("ok") && j["ok"].is_boolean());
    EXPECT_EQ(j.size(), 3u);
  }
}

TEST(CliRunGrammar, GbnfOutputMatchesTheGrammar) {
  FERRITE_SHARED_FILE(model, "models/synth/synth-llama-f32.gguf");
  const std::regex want(R"((yes|no), [a-z]{1,8}\.)");
  for (int seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto r = run_ferrite({"run", "-m", model.string(), "-p", "Answer:", "-n", "64", "--seed",
                                std::to_string(seed), "-t", "1", "--grammar",
                                R"(root ::= ("yes" | "no") ", " [a-z]{1,8} ".")"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(std::regex_match(r.out, want)) << "output: " << r.out;
  }
}

TEST(CliRunGrammar, BadGrammarNamesLineAndColumn) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"run", "-m", model.string(), "-n", "4", "--grammar", "root ::= (\"a\""});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("line 1, column"), std::string::npos) << r.err;
}

TEST(CliRunGrammar, OnlyOneConstraintAtATime) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto r = run_ferrite({"run", "-m", model.string(), "-n", "4", "--grammar", "root ::= \"a\"",
                              "--json-schema", "{}"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("only one"), std::string::npos) << r.err;
}

}  // namespace
