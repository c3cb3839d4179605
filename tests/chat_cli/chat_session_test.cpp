// runtime::ChatSession: which tokens a turn reuses from the KV cache, that
// reusing them gives the logits of evaluating everything afresh (a second
// Context is the reference), and the message list's save/load, limits and
// stop reasons. Prompts are checked against ChatML written out by hand.
#include "runtime/chat_session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"
#include "model/model.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {
namespace {

TEST(ReusablePrefix, CommonPrefixButNeverTheWholePrompt) {
  const std::vector<int32_t> cached = {1, 2, 3};
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 4, 5}), 2);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 3, 4}), 3);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2, 3}), 2);  // the last token needs its logits
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{1, 2}), 1);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{9, 2, 3, 4}), 0);
  EXPECT_EQ(reusable_prefix(cached, std::vector<int32_t>{}), 0);
  EXPECT_EQ(reusable_prefix(std::vector<int32_t>{}, std::vector<int32_t>{1, 2}), 0);
}

// ChatML (the format's definition): <|im_start|>ROLE\nCONTENT<|im_end|>\n per
// message, then <|im_start|>assistant\n as the generation prompt.
std::string chatml(const std::vector<ChatMessage>& msgs, bool generation_prompt) {
  std::string s;
  for (const ChatMessage& m : msgs) s += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  if (generation_prompt) s += "<|im_start|>assistant\n";
  return s;
}

class ChatSessionTest : public ::testing::Test {
 protected:
  void open(int64_t n_ctx) {
    const std::filesystem::path path = test::shared_path("models/stories260K.gguf");
    if (!std::filesystem::exists(path)) {
      if (test::in_ci()) FAIL() << "shared test data missing: " << path;
      GTEST_SKIP() << "shared test data missing: " << path;
    }
    model_ = model::Model::load(path.string());
    tok_ = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model_->file()));
    ctx_ = std::make_unique<Context>(model_, ContextParams{.n_ctx = n_ctx, .n_threads = 2});
  }
  std::unique_ptr<ChatSession> session(const std::string& system = "") {
    return std::make_unique<ChatSession>(
        *ctx_, *tok_, ChatSessionParams{.template_source = chat::builtin_template("chatml"), .system_prompt = system});
  }
  // BOS + the text's tokens (stories260K adds BOS).
  std::vector<int32_t> tokens_of(const std::string& text) const {
    return tok_->encode(text, /*add_special=*/true, /*parse_special=*/true);
  }
  // Logits after `tokens` from a context that has seen nothing else.
  std::vector<float> fresh_logits(const std::vector<int32_t>& tokens) const {
    Context ref(model_, {.n_ctx = ctx_->n_ctx(), .n_threads = 2});
    const std::span<const float> l = ref.eval(tokens);
    return {l.begin(), l.end()};
  }
  static void expect_close(std::span<const float> got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    float worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    EXPECT_LT(worst, 1e-3f);
  }
  // Greedy generation of at most n tokens (-1: no budget).
  static GenerationParams greedy(int64_t n = -1, bool ignore_eos = false,
                                 const std::atomic<bool>* interrupt = nullptr) {
    GenerationParams p;
    p.sampling.temperature = 0;
    p.n_predict = n;
    p.ignore_eos = ignore_eos;
    p.interrupt = interrupt;
    return p;
  }
  std::unique_ptr<ChatSession> session_with(bool context_shift, int64_t n_keep = 0) {
    return std::make_unique<ChatSession>(*ctx_, *tok_,
                                         ChatSessionParams{.template_source = chat::builtin_template("chatml"),
                                                           .system_prompt = "",
                                                           .seq = 0,
                                                           .prefill_chunk = 512,
                                                           .n_keep = n_keep,
                                                           .context_shift = context_shift});
  }

  std::shared_ptr<const model::Model> model_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::unique_ptr<Context> ctx_;
};

TEST_F(ChatSessionTest, RendersChatmlAndAddsBos) {
  open(256);
  auto s = session("Be kind.");
  s->add_message("user", "Hi");
  const std::vector<ChatMessage> msgs = {{"system", "Be kind."}, {"user", "Hi"}};
  EXPECT_EQ(s->render(true), chatml(msgs, true));
  EXPECT_EQ(s->tokenize(s->render(true)), tokens_of(chatml(msgs, true)));
  ASSERT_GE(tok_->bos(), 0);
  EXPECT_EQ(s->tokenize(s->render(true)).front(), tok_->bos());
}

TEST_F(ChatSessionTest, PrefillEvaluatesOnlyTheNewSuffix) {
  open(256);
  auto s = session();
  const std::vector<int32_t> a = tokens_of("Once upon a time there was a cat.");
  std::vector<int32_t> b = a;
  for (int32_t t : tokens_of(" The cat liked milk.")) {
    if (t != tok_->bos()) b.push_back(t);
  }
  PrefillStats st;
  s->prefill(a, &st);
  EXPECT_EQ(st.n_evaluated, static_cast<int64_t>(a.size()));
  EXPECT_EQ(st.n_reused, 0);
  const std::span<const float> logits = s->prefill(b, &st);
  EXPECT_EQ(st.n_reused, static_cast<int64_t>(a.size()));
  EXPECT_EQ(st.n_evaluated, static_cast<int64_t>(b.size() - a.size()));
  EXPECT_EQ(st.n_prompt, static_cast<int64_t>(b.size()));
  expect_close(logits, fresh_logits(b));
  EXPECT_EQ(s->cached_tokens(), b);
  EXPECT_EQ(ctx_->cache().used(), static_cast<int64_t>(b.size()));
}

TEST_F(ChatSessionTest, DivergingPromptDropsTheStaleTail) {
  open(256);
  auto s = session();
  const std::vector<int32_t> a = tokens_of("Once upon a time there was a big red ball.");
  ASSERT_GT(a.size(), 6u);
  std::vector<int32_t> c(a.begin(), a.begin() + 4);
  for (int32_t t : tokens_of("The dog ran home.")) {
    if (t != tok_->bos()) c.push_back(t);
  }
  ASSERT_NE(c[4], a[4]);
  s->prefill(a);
  PrefillStats st;
  const std::span<const float> logits = s->prefill(c, &st);
  EXPECT_EQ(st.n_reused, 4);
  EXPECT_EQ(st.n_evaluated, static_cast<int64_t>(c.size()) - 4);
  EXPECT_EQ(ctx_->cache().used(), static_cast<int64_t>(c.size()));
  EXPECT_EQ(ctx_->cache().max_pos(0), static_cast<int32_t>(c.size()) - 1);
  expect_close(logits, fresh_logits(c));

  // The same prompt again: everything but the last token is reused.
  s->prefill(c, &st);
  EXPECT_EQ(st.n_evaluated, 1);
  EXPECT_EQ(ctx_->cache().used(), static_cast<int64_t>(c.size()));
}

TEST_F(ChatSessionTest, SecondTurnReusesTheFirst) {
  open(512);
  auto s = session();
  const ChatAnswer a1 = s->respond("Hello", greedy(12));
  const std::string turn1 = chatml({{"user", "Hello"}}, true);
  EXPECT_EQ(a1.prefill.n_prompt, static_cast<int64_t>(tokens_of(turn1).size()));
  EXPECT_EQ(a1.prefill.n_evaluated, a1.prefill.n_prompt);
  EXPECT_EQ(a1.stop, FinishReason::kLength);
  EXPECT_EQ(a1.n_tokens, 12);
  ASSERT_EQ(s->messages().size(), 2u);
  EXPECT_EQ(s->messages()[1].role, "assistant");
  EXPECT_EQ(s->messages()[1].content, a1.text);

  const ChatAnswer a2 = s->respond("More", greedy(12));
  const std::string turn2 = chatml({{"user", "Hello"}, {"assistant", a1.text}, {"user", "More"}}, true);
  const std::vector<int32_t> t1 = tokens_of(turn1), t2 = tokens_of(turn2);
  EXPECT_EQ(a2.prefill.n_prompt, static_cast<int64_t>(t2.size()));
  // At least turn 1's prompt (where it agrees with turn 2's) stays cached.
  EXPECT_GE(a2.prefill.n_reused, reusable_prefix(t1, t2));
  EXPECT_EQ(a2.prefill.n_reused + a2.prefill.n_evaluated, a2.prefill.n_prompt);
  EXPECT_LT(a2.prefill.n_evaluated, a2.prefill.n_prompt);
}

TEST_F(ChatSessionTest, ResetKeepsTheSystemPromptAndClearsTheCache) {
  open(256);
  auto s = session("Be kind.");
  s->respond("Hello", greedy(4));
  ASSERT_GT(ctx_->cache().used(), 0);
  s->reset();
  ASSERT_EQ(s->messages().size(), 1u);
  EXPECT_EQ(s->messages()[0].role, "system");
  EXPECT_EQ(ctx_->cache().used(), 0);
  EXPECT_TRUE(s->cached_tokens().empty());
}

TEST_F(ChatSessionTest, SaveLoadRoundTripRestoresTheKvState) {
  open(512);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ferrite-chat-session-" + std::to_string(::getpid()) + ".json");
  const std::string kv = file.string() + ".kv";
  auto s = session("Be kind.");
  s->respond("Hello", greedy(6));
  EXPECT_TRUE(s->save(file.string()));
  ASSERT_TRUE(std::filesystem::exists(kv));
  const std::vector<ChatMessage> saved = s->messages();

  auto other = session();  // takes over sequence 0 (cleared)
  ASSERT_EQ(ctx_->cache().used(), 0);
  const PrefillStats st = other->load(file.string());
  EXPECT_EQ(st.kv_note, "KV state restored");
  ASSERT_EQ(other->messages().size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(other->messages()[i].role, saved[i].role);
    EXPECT_EQ(other->messages()[i].content, saved[i].content);
  }
  const std::vector<int32_t> want = tokens_of(chatml(saved, false));
  EXPECT_EQ(other->cached_tokens(), want);
  EXPECT_EQ(st.n_prompt, static_cast<int64_t>(want.size()));
  EXPECT_LT(st.n_evaluated, st.n_prompt);  // only the closing tail of the last message
  EXPECT_EQ(ctx_->cache().used(), static_cast<int64_t>(want.size()));
  // The restored cache continues like one that evaluated everything.
  std::vector<int32_t> more = want;
  for (int32_t t : tokens_of("<|im_start|>user\nAgain<|im_end|>\n")) {
    if (t != tok_->bos()) more.push_back(t);
  }
  expect_close(other->prefill(more), fresh_logits(more));

  // Without its KV file the conversation is evaluated again.
  std::filesystem::remove(kv);
  auto third = session();
  const PrefillStats st3 = third->load(file.string());
  EXPECT_NE(st3.kv_note.find("evaluated again"), std::string::npos) << st3.kv_note;
  EXPECT_EQ(st3.n_evaluated, static_cast<int64_t>(want.size()));
  EXPECT_EQ(third->cached_tokens(), want);
  std::filesystem::remove(file);
}

TEST_F(ChatSessionTest, CorruptKvStateFallsBackToEvaluation) {
  open(256);
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("ferrite-chat-corrupt-" + std::to_string(::getpid()) + ".json");
  const std::string kv = file.string() + ".kv";
  auto s = session();
  s->respond("Hello", greedy(4));
  ASSERT_TRUE(s->save(file.string()));
  std::ofstream(kv, std::ios::binary | std::ios::trunc) << "not a KV state";
  const std::vector<int32_t> want = tokens_of(chatml(s->messages(), false));
  auto other = session();
  const PrefillStats st = other->load(file.string());
  EXPECT_NE(st.kv_note.find("not restored"), std::string::npos) << st.kv_note;
  EXPECT_EQ(other->cached_tokens(), want);
  EXPECT_EQ(st.n_evaluated, static_cast<int64_t>(want.size()));
  std::filesystem::remove(file);
  std::filesystem::remove(kv);
}

TEST_F(ChatSessionTest, BadSavedChatsAreRefusedAndChangeNothing) {
  open(256);
  auto s = session("Be kind.");
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::string pid = std::to_string(::getpid());
  EXPECT_THROW(s->load((dir / ("ferrite-no-such-" + pid + ".json")).string()), IoError);
  const std::vector<std::string> bad = {
      "not json", "[]", R"({"messages": []})", R"({"format": "ferrite-chat"})",
      R"({"format": "ferrite-chat", "messages": [{"role": "user"}]})",
      R"({"format": "ferrite-chat", "messages": [{"role": 1, "content": "x"}]})",
      R"({"format": "ferrite-chat", "messages": [], "kv_state": 5})"};
  for (const std::string& text : bad) {
    SCOPED_TRACE(text);
    const std::filesystem::path f = dir / ("ferrite-bad-chat-" + pid + ".json");
    std::ofstream(f, std::ios::binary) << text;
    EXPECT_THROW(s->load(f.string()), InvalidArgument);
    std::filesystem::remove(f);
    ASSERT_EQ(s->messages().size(), 1u);
    EXPECT_EQ(s->messages()[0].content, "Be kind.");
  }
}

TEST_F(ChatSessionTest, WithoutShiftAConversationTooLongForTheContextIsAnError) {
  open(32);
  auto s = session_with(/*context_shift=*/false);
  const std::string long_text(400, 'a');
  EXPECT_THROW(s->respond(long_text, greedy()), InvalidArgument);
  EXPECT_TRUE(s->messages().empty());
}

TEST_F(ChatSessionTest, WithoutShiftStopsWhenTheContextIsFull) {
  open(64);
  auto s = session_with(/*context_shift=*/false);
  const ChatAnswer a = s->respond("Hi", greedy(-1, /*ignore_eos=*/true));
  EXPECT_EQ(a.stop, FinishReason::kContextFull);
  EXPECT_EQ(static_cast<int64_t>(s->cached_tokens().size()), ctx_->n_ctx());
  EXPECT_EQ(a.prefill.n_prompt + a.n_tokens, ctx_->n_ctx() + 1);  // the last sampled token is not evaluated
}

// A conversation five times longer than the context goes on: each turn
// answers (the turns' texts never fit together), the oldest tokens after the
// kept start are dropped, the cache never holds more than the context.
TEST_F(ChatSessionTest, AChatFiveTimesLongerThanTheContextKeepsGoing) {
  open(64);
  auto s = session_with(/*context_shift=*/true, /*n_keep=*/0);
  int64_t total = 0;
  for (int turn = 0; turn < 12 && total <= 5 * ctx_->n_ctx(); ++turn) {
    const ChatAnswer a = s->respond("Tell me more about the cat number " + std::to_string(turn) + ".",
                                    greedy(20, /*ignore_eos=*/true));
    EXPECT_EQ(a.stop, FinishReason::kLength) << "turn " << turn;
    EXPECT_EQ(a.n_tokens, 20) << "turn " << turn;
    EXPECT_FALSE(a.text.empty()) << "turn " << turn;
    EXPECT_LE(ctx_->cache().used(), ctx_->n_ctx());
    EXPECT_EQ(static_cast<int64_t>(s->cached_tokens().size()), ctx_->cache().max_pos(0) + 1);
    total = static_cast<int64_t>(s->sequence().history().size());
  }
  EXPECT_GT(total, 5 * ctx_->n_ctx());
  EXPECT_GT(s->sequence().n_dropped(), 4 * ctx_->n_ctx());
  EXPECT_EQ(s->cached_tokens().front(), tok_->bos());  // the BOS is always kept
  // The whole conversation is still the session's: every message is there.
  EXPECT_EQ(s->messages().size() % 2, 0u);
}

TEST_F(ChatSessionTest, InterruptDuringThePrefillDropsTheTurn) {
  open(256);
  auto s = session();
  std::atomic<bool> stop{true};
  const ChatAnswer a = s->respond("Hi", greedy(-1, false, &stop));
  EXPECT_EQ(a.stop, FinishReason::kInterrupted);
  EXPECT_EQ(a.n_tokens, 0);
  EXPECT_EQ(a.prefill.n_evaluated, 0);
  EXPECT_TRUE(s->messages().empty());
}

TEST_F(ChatSessionTest, InterruptDuringTheAnswerKeepsWhatWasSaid) {
  open(256);
  auto s = session();
  std::atomic<bool> stop{false};
  std::string streamed;
  const ChatAnswer a = s->respond("Hi", greedy(-1, /*ignore_eos=*/true, &stop),
                                  [&](std::string_view text) {
                                    streamed += text;
                                    stop.store(true);  // as a Ctrl-C would, once text has appeared
                                  });
  EXPECT_EQ(a.stop, FinishReason::kInterrupted);
  EXPECT_GE(a.n_tokens, 1);
  EXPECT_LT(a.n_tokens, 256);
  EXPECT_EQ(a.text, streamed);
  ASSERT_EQ(s->messages().size(), 2u);
  EXPECT_EQ(s->messages()[1].content, a.text);
}

TEST_F(ChatSessionTest, ChunkedPrefillMatchesOnePass) {
  open(256);
  const ChatSessionParams params{
      .template_source = chat::builtin_template("chatml"), .system_prompt = "", .prefill_chunk = 3};
  auto s = std::make_unique<ChatSession>(*ctx_, *tok_, params);
  const std::vector<int32_t> a = tokens_of("Once upon a time there was a little girl named Lily.");
  PrefillStats st;
  const std::span<const float> logits = s->prefill(a, &st);
  EXPECT_EQ(st.n_evaluated, static_cast<int64_t>(a.size()));
  expect_close(logits, fresh_logits(a));
}

}  // namespace
}  // namespace ferrite::runtime
