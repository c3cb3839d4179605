// The generation step (runtime/generation.h) on stories260K, whose greedy
// continuation of BOS is a shared golden (llama2.c, llama.cpp): the text of a
// prompt followed by the steps' text is that golden byte for byte (the first
// piece keeps its leading space after a prompt with text, loses it after a
// bare BOS), and each finish reason ends the generation where it must.
#include "runtime/generation.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/model.h"
#include "runtime/context.h"
#include "runtime/sequence.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {
namespace {

class GenerationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(golden_path, "models/stories260K.greedy200.txt");
    model_ = model::Model::load(model_path.string());
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model_->file()));
    vocab_ = std::make_unique<GenerationVocab>(*tok_);
    golden_ = test::read_file(golden_path);
  }
  GenerationParams greedy(int64_t n) const {
    GenerationParams p;
    p.sampling.temperature = 0;
    p.n_predict = n;
    return p;
  }
  // Runs a whole generation after `prompt`; returns the text.
  std::string run(const std::string& prompt, const GenerationParams& p, FinishReason* finish = nullptr,
                  std::vector<GenerationStep>* steps = nullptr) {
    Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
    Sequence seq(ctx, {});
    const std::vector<int32_t> tokens = tok_->encode(prompt, true, true);
    Generation gen(*vocab_, p, {.n_ctx = 256, .n_ctx_train = 256}, tokens);
    std::span<const float> logits = seq.prefill(tokens);
    std::string text;
    while (!gen.done()) {
      GenerationStep s = seq.step(gen, logits);
      text += s.text;
      if (steps) steps->push_back(std::move(s));
    }
    if (finish) *finish = gen.finish();
    return text;
  }

  std::shared_ptr<const model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<GenerationVocab> vocab_;
  std::string golden_;
};

TEST_F(GenerationTest, PromptAndContinuationAreTheGoldenByteForByte) {
  const std::string prompt = "Once upon a";
  ASSERT_EQ(golden_.compare(0, prompt.size(), prompt), 0);
  FinishReason why = FinishReason::kNone;
  const std::string text = run(prompt, greedy(30), &why);
  ASSERT_GT(text.size(), 20u);
  EXPECT_EQ(text[0], ' ');  // " time": the space after "a" is the first piece's
  EXPECT_EQ(prompt + text, golden_.substr(0, prompt.size() + text.size()));
  EXPECT_EQ(why, FinishReason::kLength);
}

TEST_F(GenerationTest, AfterABareBosTheFirstSpaceGoes) {
  const std::string text = run("", greedy(20));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text, golden_.substr(0, text.size()));
}

TEST_F(GenerationTest, BudgetEndsAfterExactlyNTokens) {
  std::vector<GenerationStep> steps;
  FinishReason why = FinishReason::kNone;
  run("Once upon a time", greedy(7), &why, &steps);
  ASSERT_EQ(steps.size(), 7u);
  for (size_t i = 0; i + 1 < steps.size(); ++i) EXPECT_EQ(steps[i].finish, FinishReason::kNone);
  EXPECT_EQ(steps.back().finish, FinishReason::kLength);
  EXPECT_GE(steps.back().token, 0);
  EXPECT_EQ(why, FinishReason::kLength);
}

TEST_F(GenerationTest, StopStringCutsTheTextAndNamesItself) {
  // The golden goes on "... named Lily. She loved ...": stop at "Lily".
  GenerationParams p = greedy(100);
  p.stop = {"Lily"};
  Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
  Sequence seq(ctx, {});
  const std::vector<int32_t> tokens = tok_->encode("", true, true);
  Generation gen(*vocab_, p, {.n_ctx = 256}, tokens);
  std::span<const float> logits = seq.prefill(tokens);
  std::string text;
  while (!gen.done()) text += seq.step(gen, logits).text;
  EXPECT_EQ(gen.finish(), FinishReason::kStopString);
  EXPECT_EQ(gen.stop_word(), "Lily");
  EXPECT_EQ(text, golden_.substr(0, golden_.find("Lily")));
}

TEST_F(GenerationTest, EndOfGenerationTokenEndsWithoutText) {
  GenerationParams p = greedy(10);
  p.sampling.logit_bias.push_back({tok_->eos(), 1000.0f});
  FinishReason why = FinishReason::kNone;
  std::vector<GenerationStep> steps;
  EXPECT_EQ(run("Once", p, &why, &steps), "");
  EXPECT_EQ(why, FinishReason::kEndOfGeneration);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].token, -1);
  // ignore_eos goes on through them.
  p.ignore_eos = true;
  run("Once", p, &why);
  EXPECT_EQ(why, FinishReason::kLength);
}

TEST_F(GenerationTest, GrammarEndsWhenItAdmitsNothingMore) {
  GenerationParams p = greedy(50);
  p.grammar = "root ::= \"Once upon\"";
  FinishReason why = FinishReason::kNone;
  EXPECT_EQ(run("", p, &why), "Once upon");
  EXPECT_EQ(why, FinishReason::kGrammar);
}

TEST_F(GenerationTest, InterruptEndsAtTheNextStep) {
  std::atomic<bool> stop{true};
  GenerationParams p = greedy(50);
  p.interrupt = &stop;
  FinishReason why = FinishReason::kNone;
  EXPECT_EQ(run("Once", p, &why), "");
  EXPECT_EQ(why, FinishReason::kInterrupted);
}

TEST_F(GenerationTest, LogprobsAreTheLogSoftmaxOfTheLogits) {
  GenerationParams p = greedy(1);
  p.n_probs = 3;
  Context ctx(model_, {.n_ctx = 64, .n_threads = 2});
  const std::vector<int32_t> tokens = tok_->encode("Once upon a", true, true);
  Generation gen(*vocab_, p, {.n_ctx = 64}, tokens);
  const std::span<const float> logits = ctx.eval(tokens);
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  const GenerationStep s = gen.next(logits);
  ASSERT_TRUE(s.has_logprob);
  EXPECT_NEAR(s.logprob.logprob, logits[static_cast<size_t>(s.token)] - std::log(z), 1e-4);
  ASSERT_EQ(s.logprob.top.size(), 3u);
  EXPECT_EQ(s.logprob.top[0].first, s.token);  // greedy: the best one
}

TEST_F(GenerationTest, ToolCallsAreParsedAtTheEnd) {
  GenerationParams p = greedy(100);
  p.grammar = R"(root ::= "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>")";
  p.parse_tool_calls = true;
  Context ctx(model_, {.n_ctx = 256, .n_threads = 2});
  Sequence seq(ctx, {});
  const std::vector<int32_t> tokens = tok_->encode("", true, true);
  Generation gen(*vocab_, p, {.n_ctx = 256}, tokens);
  std::span<const float> logits = seq.prefill(tokens);
  while (!gen.done()) seq.step(gen, logits);
  EXPECT_EQ(gen.finish(), FinishReason::kGrammar);
  ASSERT_EQ(gen.reply().calls.size(), 1u);
  EXPECT_EQ(gen.reply().calls[0].name, "f");
  EXPECT_EQ(gen.reply().calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(gen.reply().content, "");
}

TEST_F(GenerationTest, ContextFullWithoutShiftEndsTheGeneration) {
  Context ctx(model_, {.n_ctx = 32, .n_threads = 2});
  Sequence seq(ctx, {.context_shift = false});
  const std::vector<int32_t> tokens = tok_->encode("Once upon a time", true, true);
  Generation gen(*vocab_, greedy(-1), {.n_ctx = 32}, tokens);
  std::span<const float> logits = seq.prefill(tokens);
  while (!gen.done()) seq.step(gen, logits);
  EXPECT_EQ(gen.finish(), FinishReason::kContextFull);
  EXPECT_EQ(static_cast<int64_t>(seq.cached().size()), 32);
  EXPECT_EQ(static_cast<int64_t>(tokens.size()) + gen.n_generated(), 33);  // the last token is not evaluated
}

TEST_F(GenerationTest, WithShiftAGenerationOutgrowsTheContext) {
  Context ctx(model_, {.n_ctx = 32, .n_threads = 2});
  Sequence seq(ctx, {.n_keep = 1});
  const std::vector<int32_t> tokens = tok_->encode("Once upon a time", true, true);
  GenerationParams p = greedy(100);
  p.ignore_eos = true;
  Generation gen(*vocab_, p, {.n_ctx = 32}, tokens);
  std::span<const float> logits = seq.prefill(tokens);
  while (!gen.done()) seq.step(gen, logits);
  EXPECT_EQ(gen.finish(), FinishReason::kLength);
  EXPECT_EQ(gen.n_generated(), 100);
  EXPECT_GT(seq.n_dropped(), 0);
  EXPECT_LE(static_cast<int64_t>(seq.cached().size()), 32);
  EXPECT_EQ(seq.cached().front(), tok_->bos());  // the kept start
  EXPECT_EQ(static_cast<int64_t>(seq.history().size()), static_cast<int64_t>(tokens.size()) + 99);
}

TEST(FinishReasonNames, OpenAiHasStopAndLength) {
  EXPECT_STREQ(openai_finish_reason(FinishReason::kEndOfGeneration), "stop");
  EXPECT_STREQ(openai_finish_reason(FinishReason::kStopString), "stop");
  EXPECT_STREQ(openai_finish_reason(FinishReason::kGrammar), "stop");
  EXPECT_STREQ(openai_finish_reason(FinishReason::kLength), "length");
  EXPECT_STREQ(openai_finish_reason(FinishReason::kContextFull), "length");
}

}  // namespace
}  // namespace ferrite::runtime
