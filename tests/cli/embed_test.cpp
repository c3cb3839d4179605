// `ferrite embed`: embeddings of a tiny random bert against the plain
// double-precision reference forward (tests/model/tiny_bert.h) on token ids
// that follow from the WordPiece definition; pooling overrides;
// llama-embedding's normalization modes computed here from their
// definitions; output formats; errors.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"
#include "tiny_bert_vocab.h"

namespace {

using ferrite::test::run_ferrite;
using ferrite::test::TinyBert;
using ferrite::test::TinyBertWithVocab;
using nlohmann::json;
using V = TinyBertWithVocab;

constexpr double kTolerance = 1e-3;  // LayerNorm'ed outputs of order 1, f32 vs double
constexpr int64_t kEmbd = TinyBert::kEmbd;
constexpr uint32_t kPoolNone = 0, kPoolMean = 1, kPoolCls = 2, kPoolLast = 3;  // <arch>.pooling_type

// "the cats sat." and "a dog ran on the mat" with [CLS] ... [SEP]: "cats"
// is "▁cat" + "s" (longest match first), "." a word of its own.
const std::vector<int32_t> kFirst = {V::kClsId, V::kThe, V::kCat, V::kS, V::kSat, V::kDot, V::kSepId};
const std::vector<int32_t> kSecond = {V::kClsId, V::kA, V::kDog, V::kRan, V::kOn, V::kThe, V::kMat, V::kSepId};
const char* const kFirstText = "The cats sat.";
const char* const kSecondText = "a dog ran on the mat";

std::vector<double> pool_ref(uint32_t pooling, const std::vector<double>& states) {
  const int64_t n = static_cast<int64_t>(states.size()) / kEmbd;
  std::vector<double> out(kEmbd, 0.0);
  for (int64_t d = 0; d < kEmbd; ++d) {
    if (pooling == kPoolMean) {
      for (int64_t i = 0; i < n; ++i) out[d] += states[i * kEmbd + d] / static_cast<double>(n);
    } else {
      out[d] = states[(pooling == kPoolCls ? 0 : n - 1) * kEmbd + d];
    }
  }
  return out;
}

// llama-embedding's normalization from its definition: divide by the p-norm
// (p = 1, 2, ...), or scale so the largest |x| becomes 32760 (p = 0).
std::vector<double> normalized(std::vector<double> v, int p) {
  double s = 0.0;
  for (double x : v) s = p == 0 ? std::max(s, std::fabs(x)) : s + std::pow(std::fabs(x), p);
  s = p == 0 ? s / 32760.0 : std::pow(s, 1.0 / p);
  for (double& x : v) x /= s;
  return v;
}

std::vector<std::vector<double>> embeddings_of(const json& j) {
  std::vector<std::vector<double>> out;
  EXPECT_EQ(j["object"], "list");
  for (size_t i = 0; i < j["data"].size(); ++i) {
    const json& d = j["data"][i];
    EXPECT_EQ(d["object"], "embedding");
    EXPECT_EQ(d["index"].get<size_t>(), i);
    out.push_back(d["embedding"].get<std::vector<double>>());
  }
  return out;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t d = 0; d < want.size(); ++d) EXPECT_NEAR(got[d], want[d], tol) << "component " << d;
}

TEST(CliEmbed, MeanPooledPromptsMatchReference) {
  TinyBertWithVocab model(kPoolMean);
  const auto r = run_ferrite({"embed", "-m", model.path(), "-p", std::string(kFirstText) + "\n" + kSecondText,
                              "--embd-normalize", "-1", "--embd-output-format", "json", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings_of(json::parse(r.out));
  ASSERT_EQ(got.size(), 2u);
  expect_near(got[0], pool_ref(kPoolMean, model.bert().reference(kFirst)), kTolerance);
  expect_near(got[1], pool_ref(kPoolMean, model.bert().reference(kSecond)), kTolerance);
}

TEST(CliEmbed, RepeatedPromptsAndCustomSeparator) {
  TinyBertWithVocab model(kPoolCls);
  const auto r = run_ferrite({"embed", "-m", model.path(), "-p", kFirstText, "-p",
                              std::string(kSecondText) + "<#>" + kFirstText, "--embd-separator", "<#>",
                              "--embd-normalize", "-1", "--embd-output-format", "array"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = json::parse(r.out).get<std::vector<std::vector<double>>>();
  ASSERT_EQ(got.size(), 3u);
  const auto first = pool_ref(kPoolCls, model.bert().reference(kFirst));
  expect_near(got[0], first, kTolerance);
  expect_near(got[1], pool_ref(kPoolCls, model.bert().reference(kSecond)), kTolerance);
  expect_near(got[2], first, kTolerance);
}

TEST(CliEmbed, EscapedNewlineInPromptSeparates) {
  TinyBertWithVocab model(kPoolMean);
  // A backslash and an n, as typed in a shell: llama.cpp turns it into a newline.
  const auto r = run_ferrite({"embed", "-m", model.path(), "-p", std::string(kFirstText) + "\\n" + kSecondText,
                              "--embd-normalize", "-1", "--embd-output-format", "array"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = json::parse(r.out).get<std::vector<std::vector<double>>>();
  ASSERT_EQ(got.size(), 2u);
  expect_near(got[1], pool_ref(kPoolMean, model.bert().reference(kSecond)), kTolerance);
}

TEST(CliEmbed, PoolingOverride) {
  TinyBertWithVocab model(kPoolMean);
  for (const auto& [name, pooling] : {std::pair{"cls", kPoolCls}, std::pair{"last", kPoolLast}}) {
    SCOPED_TRACE(name);
    const auto r = run_ferrite({"embed", "-m", model.path(), "-p", kSecondText, "--pooling", name,
                                "--embd-normalize", "-1", "--embd-output-format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = embeddings_of(json::parse(r.out));
    ASSERT_EQ(got.size(), 1u);
    expect_near(got[0], pool_ref(pooling, model.bert().reference(kSecond)), kTolerance);
  }
}

TEST(CliEmbed, PoolingNoneGivesEveryTokenState) {
  for (bool from_model : {true, false}) {
    SCOPED_TRACE(from_model ? "model without pooling" : "--pooling none");
    TinyBertWithVocab model(from_model ? kPoolNone : kPoolMean);
    std::vector<std::string> args = {"embed", "-m", model.path(), "-p", kFirstText, "--embd-normalize", "-1",
                                     "--embd-output-format", "json"};
    if (!from_model) args.insert(args.end(), {"--pooling", "none"});
    const auto r = run_ferrite(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = embeddings_of(json::parse(r.out));
    const std::vector<double> states = model.bert().reference(kFirst);  // [n, kEmbd]
    ASSERT_EQ(got.size(), kFirst.size());
    for (size_t i = 0; i < kFirst.size(); ++i) {
      expect_near(got[i], std::vector<double>(states.begin() + i * kEmbd, states.begin() + (i + 1) * kEmbd),
                  kTolerance);
    }
  }
}

TEST(CliEmbed, NormalizationModes) {
  TinyBertWithVocab model(kPoolMean);
  const std::vector<double> raw = pool_ref(kPoolMean, model.bert().reference(kFirst));
  for (int p : {0, 1, 2, 3, 7}) {
    SCOPED_TRACE("--embd-normalize " + std::to_string(p));
    std::vector<std::string> args = {"embed", "-m", model.path(), "-p", kFirstText, "--embd-output-format", "json"};
    if (p != 2) args.insert(args.end(), {"--embd-normalize", std::to_string(p)});  // 2 is the default
    const auto r = run_ferrite(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto got = embeddings_of(json::parse(r.out));
    ASSERT_EQ(got.size(), 1u);
    const std::vector<double> want = normalized(raw, p);
    if (p == 0) {
      // Printed as integers: within rounding of the scaled values (and the
      // reference's 1e-3 error scaled by 32760 / max|x|).
      double max_abs = 0.0;
      for (double x : raw) max_abs = std::max(max_abs, std::fabs(x));
      expect_near(got[0], want, 0.5 + kTolerance * 32760.0 / max_abs);
      for (double x : got[0]) EXPECT_EQ(x, std::round(x));
    } else {
      expect_near(got[0], want, kTolerance);
    }
  }
}

TEST(CliEmbed, TextFormatShowsValuesAndSimilarity) {
  TinyBertWithVocab model(kPoolMean);
  const auto one = run_ferrite({"embed", "-m", model.path(), "-p", kFirstText});
  ASSERT_EQ(one.status, 0) << one.err;
  ASSERT_EQ(one.out.rfind("embedding 0: ", 0), 0u) << one.out;
  // A single prompt: all values, normalized to unit length.
  std::vector<double> values;
  {
    std::istringstream in(one.out.substr(13));
    for (double x; in >> x;) values.push_back(x);
  }
  expect_near(values, normalized(pool_ref(kPoolMean, model.bert().reference(kFirst)), 2), kTolerance);

  const auto two =
      run_ferrite({"embed", "-m", model.path(), "-p", std::string(kFirstText) + "\n" + kFirstText});
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("embedding 1: "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("cosine similarity matrix"), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("  1.00   1.00 The ca"), std::string::npos) << two.out;  // identical prompts
}

TEST(CliEmbed, PromptsFromFile) {
  TinyBertWithVocab model(kPoolLast);
  const std::string file = model.path() + ".txt";
  std::ofstream(file) << kFirstText << "\n" << kSecondText << "\n";  // the final newline ends the text
  const auto r = run_ferrite({"embed", "-m", model.path(), "-f", file, "--embd-normalize", "-1",
                              "--embd-output-format", "json"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto got = embeddings_of(json::parse(r.out));
  ASSERT_EQ(got.size(), 2u);
  expect_near(got[1], pool_ref(kPoolLast, model.bert().reference(kSecond)), kTolerance);
}

TEST(CliEmbed, DecoderModelGivesTokenStatesAndPoolsThem) {
  FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
  const std::vector<std::string> base = {"embed", "-m", stories.string(), "-p", "Once upon a time",
                                         "--embd-output-format", "array", "--embd-normalize", "-1"};
  const auto r = run_ferrite(base);
  ASSERT_EQ(r.status, 0) << r.err;
  // llama has no pooling: one 64-wide state per token (stories260K: dim 64, shared/README.md).
  const auto rows = json::parse(r.out).get<std::vector<std::vector<double>>>();
  ASSERT_GE(rows.size(), 2u);
  for (const auto& row : rows) ASSERT_EQ(row.size(), 64u);
  // --pooling mean/last: the mean and the last of those states.
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--pooling", "mean"});
  const auto mean = run_ferrite(args);
  ASSERT_EQ(mean.status, 0) << mean.err;
  std::vector<double> want(64, 0.0);
  for (const auto& row : rows) {
    for (size_t d = 0; d < 64; ++d) want[d] += row[d] / static_cast<double>(rows.size());
  }
  expect_near(json::parse(mean.out).get<std::vector<std::vector<double>>>().at(0), want, 1e-5);
  args.back() = "last";
  const auto last = run_ferrite(args);
  ASSERT_EQ(last.status, 0) << last.err;
  expect_near(json::parse(last.out).get<std::vector<std::vector<double>>>().at(0), rows.back(), 1e-5);
}

TEST(CliEmbed, ArchitectureWithoutHiddenStatesIsRefused) {
  FERRITE_SHARED_FILE(phi3, "models/synth/synth-phi3-f32.gguf");
  const auto r = run_ferrite({"embed", "-m", phi3.string(), "-p", "hello"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("phi3"), std::string::npos) << r.err;
}

TEST(CliEmbed, BadInputIsAClearError) {
  TinyBertWithVocab model(kPoolMean);
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"embed", "-m", "/nonexistent/model.gguf", "-p", "x"}, "error:"},
      {{"embed", "-m", model.path()}, "-p"},
      {{"embed", "-m", model.path(), "-f", "/nonexistent/prompts.txt"}, "prompts.txt"},
      {{"embed", "-m", model.path(), "-p", "x", "--pooling", "max"}, "pooling"},
      {{"embed", "-m", model.path(), "-p", "x", "--embd-normalize", "-2"}, "embd-normalize"},
      {{"embed", "-m", model.path(), "-p", "x", "--embd-output-format", "xml"}, "xml"},
      {{"embed", "-m", model.path(), "-p", "x", "--embd-separator", ""}, "separator"},
      {{"embed", "-m", model.path(), "-p", "the cat the cat the cat the cat", "-b", "4"}, "batch size"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args.back());
    const auto r = run_ferrite(args);
    EXPECT_NE(r.status, 0);
    EXPECT_LT(r.status, 128) << "killed by a signal";
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
}

TEST(CliEmbed, PromptLongerThanTheModelContextIsRefused) {
  TinyBertWithVocab model(kPoolMean);
  std::string text;
  for (int64_t i = 0; i < TinyBert::kCtx; ++i) text += "the ";  // kCtx words + [CLS] + [SEP]
  const auto r = run_ferrite({"embed", "-m", model.path(), "-p", text});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
}

}  // namespace
