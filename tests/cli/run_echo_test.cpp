// `ferrite run --echo` prints exactly the prompt followed by the
// continuation, byte for byte, for the three tokenizer families that
// generate: SentencePiece (stories260K, against its shared greedy golden),
// BPE (the gpt-2 vocabulary) and Unigram (a small T5-style vocabulary made
// here). The BPE and Unigram models are tiny random llamas whose greedy
// output is readable text (support/tiny_llama.h); the expected text is the
// tokenizer's plain decode of the prompt tokens and a greedy argmax loop run
// here on the same weights, not the generation step under test. Also: runs
// longer than the context go on (context shift), -n -1 is accepted.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "runtime/context.h"
#include "sampling/sampler.h"
#include "support/test_data.h"
#include "support/tiny_llama.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::test {
namespace {

namespace fs = std::filesystem;

// What greedy decoding after `prompt` writes: decode(prompt tokens +
// argmax tokens) with the tokenizer's own decode (n tokens or an end).
std::string reference_echo(const std::string& model_path, const std::string& prompt, int n) {
  auto model = model::Model::load(model_path);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  runtime::Context ctx(model, {.n_ctx = 256, .n_threads = 2});
  std::vector<int32_t> ids = tok.encode(prompt, true, true);
  std::span<const float> logits = ctx.eval(ids);
  for (int i = 0; i < n; ++i) {
    const int32_t next = sampling::argmax(logits);
    if (tok.is_eog(next)) break;
    ids.push_back(next);
    const int32_t one[1] = {next};
    logits = ctx.eval(one);
  }
  return tok.decode(ids);
}

// A T5-style Unigram vocabulary: control and unknown tokens, words with the
// U+2581 space marker, single letters.
class UgmVocab {
 public:
  UgmVocab() {
    path_ = fs::temp_directory_path() / ("ferrite-ugm-vocab-" + std::to_string(::getpid()) + ".gguf");
    std::vector<std::string> tokens = {"<pad>", "</s>", "<unk>", "\xe2\x96\x81"};
    for (const char* w : {"Once", "upon", "a", "time", "there", "was", "little", "girl", "cat", "dog", "sun", "day"}) {
      tokens.push_back(std::string("\xe2\x96\x81") + w);
    }
    for (char c = 'a'; c <= 'z'; ++c) tokens.push_back(std::string(1, c));
    std::vector<gguf::Value> t, scores, types;
    for (size_t i = 0; i < tokens.size(); ++i) {
      t.push_back(gguf::Value::string(tokens[i]));
      scores.push_back(gguf::Value::f32(i < 3 ? 0.0f : -static_cast<float>(i) / 10.0f));
      types.push_back(gguf::Value::i32(i == 2 ? 2 : i < 2 ? 3 : 1));  // unknown, control, normal
    }
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string("llama"));
    w.set("tokenizer.ggml.model", gguf::Value::string("t5"));
    w.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::STRING, t));
    w.set("tokenizer.ggml.scores", gguf::Value::array(gguf::ValueType::FLOAT32, scores));
    w.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::ValueType::INT32, types));
    // As T5 files say: a space before the first word, runs of spaces merged.
    w.set("tokenizer.ggml.add_space_prefix", gguf::Value::boolean(true));
    w.set("tokenizer.ggml.remove_extra_whitespaces", gguf::Value::boolean(true));
    w.open(path_.string());
    w.close();
  }
  ~UgmVocab() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void expect_echo(const std::string& model, const std::string& prompt, int n) {
  const std::string want = reference_echo(model, prompt, n);
  ASSERT_EQ(want.compare(0, prompt.size(), prompt), 0) << "the prompt does not round-trip: " << want;
  ASSERT_GT(want.size(), prompt.size()) << "nothing generated";
  const CommandResult echo = run_ferrite({"run", model, "-p", prompt, "-n", std::to_string(n), "--temp", "0",
                                          "--echo", "-c", "256", "-t", "2"});
  ASSERT_EQ(echo.status, 0) << echo.err;
  EXPECT_EQ(echo.out, want);
  // Without --echo: exactly the continuation.
  const CommandResult plain =
      run_ferrite({"run", model, "-p", prompt, "-n", std::to_string(n), "--temp", "0", "-c", "256", "-t", "2"});
  ASSERT_EQ(plain.status, 0) << plain.err;
  EXPECT_EQ(prompt + plain.out, want);
}

TEST(CliRunEcho, SentencePieceIsThePromptAndTheGolden) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(golden_path, "models/stories260K.greedy200.txt");
  const std::string golden = read_file(golden_path);
  const CommandResult r =
      run_ferrite({"run", model.string(), "-p", "Once upon a", "-n", "8", "--temp", "0", "--echo", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_GT(r.out.size(), std::string("Once upon a").size());
  EXPECT_EQ(r.out, golden.substr(0, r.out.size()));  // "Once upon a time, there was ..."
  expect_echo(model.string(), "Once upon a", 8);
}

TEST(CliRunEcho, BpeGpt2Vocabulary) {
  FERRITE_SHARED_FILE(vocab_path, "vocab/ggml-vocab-gpt-2.gguf");
  const gguf::File vocab = gguf::File::open(vocab_path.string());
  TinyLlamaConfig c;
  c.clean_output = true;
  const auto model = make_tiny_llama(vocab, c);
  expect_echo(model->path().string(), "Hello world, this is", 12);
}

TEST(CliRunEcho, UnigramVocabulary) {
  const UgmVocab v;
  const gguf::File vocab = gguf::File::open(v.path().string());
  TinyLlamaConfig c;
  c.clean_output = true;
  const auto model = make_tiny_llama(vocab, c);
  expect_echo(model->path().string(), "Once upon a", 12);
}

// -c 64 -n 100: llama.cpp drops the oldest half (after --keep) and goes on.
TEST(CliRun, GeneratesPastTheContextByShifting) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const CommandResult r = run_ferrite({"run", model.string(), "-p", "Once upon a time", "-c", "64", "-n", "100",
                                       "--temp", "0", "--ignore-eos", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("generation: 100 tokens"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("context shifted"), std::string::npos) << r.err;
  const CommandResult off = run_ferrite({"run", model.string(), "-p", "Once upon a time", "-c", "64", "-n", "100",
                                         "--temp", "0", "--no-context-shift", "-t", "2"});
  EXPECT_EQ(off.status, 1);
  EXPECT_NE(off.err.find("exceeds the context size"), std::string::npos) << off.err;
}

TEST(CliRun, MinusOneGeneratesUntilTheEnd) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  // The grammar ends the generation; -n -1 sets no budget.
  const CommandResult r = run_ferrite({"run", model.string(), "-p", "Once", "-n", "-1", "--temp", "0", "--grammar",
                                       "root ::= \" upon a time\"", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, " upon a time");
}

TEST(CliRun, EscapesAreProcessedUnlessNoEscape) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const CommandResult e = run_ferrite({"run", model.string(), "-p", "a\\tb", "-n", "0", "--echo", "-t", "2"});
  ASSERT_EQ(e.status, 0) << e.err;
  EXPECT_EQ(e.out, "a\tb");
  const CommandResult raw =
      run_ferrite({"run", model.string(), "-p", "a\\tb", "-n", "0", "--echo", "--no-escape", "-t", "2"});
  ASSERT_EQ(raw.status, 0) << raw.err;
  EXPECT_EQ(raw.out, "a\\tb");
}

TEST(CliRun, ReversePromptStopsLikeStop) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(golden_path, "models/stories260K.greedy200.txt");
  const std::string golden = read_file(golden_path);
  const CommandResult r =
      run_ferrite({"run", model.string(), "-p", "", "-n", "60", "--temp", "0", "-r", "Lily", "-t", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, golden.substr(0, golden.find("Lily")));
}

}  // namespace
}  // namespace ferrite::test
