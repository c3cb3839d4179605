// `ferrite run` and `ferrite chat` with speculative decoding: the same
// greedy text as without (a gpt2 draft for synth-llama, prompt lookup on
// stories260K), the drafted/accepted counts on stderr, and clear errors
// (status 2 or 1, a message naming the flag) for bad speculative options.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "support/test_data.h"

namespace ferrite::test {
namespace {

class RunSpeculative : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(llama, "models/synth/synth-llama-f32.gguf");
    FERRITE_SHARED_FILE(gpt2, "models/synth/synth-gpt2-f32.gguf");
    FERRITE_SHARED_FILE(stories, "models/stories260K.gguf");
    llama_ = llama.string();
    gpt2_ = gpt2.string();
    stories_ = stories.string();
  }
  static std::vector<std::string> run(const std::string& model, const std::string& prompt,
                                      std::vector<std::string> extra) {
    std::vector<std::string> a = {"run", model, "-p", prompt, "-n", "40", "--temp", "0", "-t", "2", "-c", "256"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string llama_, gpt2_, stories_;
};

TEST_F(RunSpeculative, DraftModelAndLookupGiveTheSameText) {
  const auto plain = run_ferrite(run(llama_, "The quick brown fox", {}));
  ASSERT_EQ(plain.status, 0) << plain.err;
  const auto spec = run_ferrite(run(llama_, "The quick brown fox", {"-md", gpt2_, "--draft-p-min", "0", "--draft-max", "4"}));
  ASSERT_EQ(spec.status, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("draft: "), std::string::npos) << spec.err;
  EXPECT_NE(spec.err.find(" drafted, "), std::string::npos) << spec.err;

  const std::string story = "Lily was sad. She said, \"I'm sorry.\" Lily was sad. She said,";
  const auto splain = run_ferrite(run(stories_, story, {}));
  const auto lookup = run_ferrite(run(stories_, story, {"--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2"}));
  ASSERT_EQ(lookup.status, 0) << lookup.err;
  EXPECT_EQ(lookup.out, splain.out);
  EXPECT_NE(lookup.err.find("ngram-simple: "), std::string::npos) << lookup.err;
}

TEST_F(RunSpeculative, ChatSpeculatesThroughTheSameLoop) {
  const std::vector<std::string> base = {"chat", stories_, "-n", "24", "--temp", "0", "-t", "2", "-c", "256",
                                         "--verbose"};
  auto with = base;
  with.insert(with.end(), {"-md", stories_, "--draft-p-min", "0"});
  const auto plain = run_ferrite(base, "Hello\n");
  const auto spec = run_ferrite(with, "Hello\n");
  ASSERT_EQ(spec.status, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("draft: "), std::string::npos) << spec.err;
}

TEST_F(RunSpeculative, BadOptionsFailWithTheirName) {
  struct Case {
    std::vector<std::string> extra;
    const char* says;
  };
  const std::vector<Case> cases = {
      {{"--spec-type", "magic"}, "--spec-type"},
      {{"--spec-type", "draft"}, "-md"},
      {{"--draft-max", "-1"}, "--draft-max"},
      {{"--draft-min", "5", "--draft-max", "4", "--spec-type", "ngram-simple"}, "--draft-min"},
      {{"-md", gpt2_, "--draft-p-min", "1.5"}, "--draft-p-min"},
      {{"--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "0"}, "--spec-ngram-simple-size-n"},
      {{"-md", "/nonexistent/draft.gguf"}, "draft.gguf"},
      {{"-md", stories_}, "by more than 128"},  // a 512-token vocabulary for a 4096-token target
  };
  for (const Case& c : cases) {
    const auto r = run_ferrite(run(llama_, "x", c.extra));
    EXPECT_NE(r.status, 0) << c.says;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.says << ": " << r.err;
  }
}

}  // namespace
}  // namespace ferrite::test
