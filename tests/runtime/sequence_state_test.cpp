// Saving a sequence's state to a file and restoring it: the next token's
// logits after a restore equal (bit for bit) those of an uninterrupted run,
// since the restored cells hold the same bytes in the same cache order.
// Bad files are refused with typed errors.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"
#include "runtime/context_state.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("ferrite_seqstate_" + std::to_string(::getpid()) + "_" + name + ".bin");
}

struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name) : path(temp_path(name)) {}
  ~TempFile() { std::filesystem::remove(path); }
};

class SequenceState : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p2.json");
    model_ = model::Model::load(model_path.string());
    auto all = nlohmann::json::parse(test::read_file(golden_path)).at("tokens").get<std::vector<int32_t>>();
    prompt_.assign(all.begin(), all.begin() + kPrompt);
    next_ = all[kPrompt];
  }
  static constexpr size_t kPrompt = 40;
  std::shared_ptr<const model::Model> model_;
  std::vector<int32_t> prompt_;
  int32_t next_ = 0;
};

TEST_F(SequenceState, RestoredLogitsEqualUninterruptedRun) {
  runtime::Context plain(model_, {.n_ctx = 128, .n_threads = 2});
  plain.eval(prompt_);
  const auto ref_span = plain.eval({&next_, 1});
  const std::vector<float> ref(ref_span.begin(), ref_span.end());

  TempFile f("roundtrip");
  {
    runtime::Context first(model_, {.n_ctx = 128, .n_threads = 2});
    first.eval(prompt_);
    first.save_sequence(0, f.path.string(), prompt_);
    first.clear();
    EXPECT_EQ(first.cache().used(), 0);
  }
  runtime::Context second(model_, {.n_ctx = 128, .n_threads = 2});
  EXPECT_EQ(second.load_sequence(0, f.path.string()), prompt_);
  EXPECT_EQ(second.cache().max_pos(0), static_cast<int32_t>(kPrompt) - 1);
  const auto got = second.eval({&next_, 1});
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "logit " << i;
}

TEST_F(SequenceState, LoadsIntoAnotherSequenceId) {
  runtime::Context ctx(model_, {.n_ctx = 128, .n_threads = 2});
  ctx.eval(prompt_, 0);
  TempFile f("other_seq");
  ctx.save_sequence(0, f.path.string());
  EXPECT_TRUE(ctx.load_sequence(3, f.path.string()).empty());
  EXPECT_EQ(ctx.cache().max_pos(3), static_cast<int32_t>(kPrompt) - 1);
  EXPECT_EQ(ctx.cache().used(), static_cast<int64_t>(2 * kPrompt));
  // Loading again replaces the sequence rather than adding to it.
  ctx.load_sequence(3, f.path.string());
  EXPECT_EQ(ctx.cache().used(), static_cast<int64_t>(2 * kPrompt));
}

TEST_F(SequenceState, RefusesBadFiles) {
  runtime::Context ctx(model_, {.n_ctx = 128, .n_threads = 2});
  ctx.eval(prompt_);
  TempFile good("good");
  ctx.save_sequence(0, good.path.string(), prompt_);
  const std::string bytes = test::read_file(good.path);

  TempFile bad("bad");
  auto write_bad = [&](const std::string& content) {
    std::ofstream(bad.path, std::ios::binary | std::ios::trunc) << content;
    return bad.path.string();
  };
  EXPECT_THROW(ctx.load_sequence(0, (good.path.string() + ".missing")), IoError);
  EXPECT_THROW(ctx.load_sequence(0, write_bad("")), FormatError);
  EXPECT_THROW(ctx.load_sequence(0, write_bad(bytes.substr(0, bytes.size() - 1))), FormatError);
  EXPECT_THROW(ctx.load_sequence(0, write_bad(bytes + "x")), FormatError);
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_THROW(ctx.load_sequence(0, write_bad(magic)), FormatError);
  std::string version = bytes;
  version[4] = 9;
  EXPECT_THROW(ctx.load_sequence(0, write_bad(version)), FormatError);
  std::string layers = bytes;  // n_layer (field 2) of another model
  layers[8] = static_cast<char>(layers[8] + 1);
  EXPECT_THROW(ctx.load_sequence(0, write_bad(layers)), InvalidArgument);
  std::string cells = bytes;  // n_cells (field 9) huge: size check, no allocation
  cells[36] = cells[37] = cells[38] = static_cast<char>(0x7f);
  EXPECT_THROW(ctx.load_sequence(0, write_bad(cells)), FormatError);
  std::string token = bytes;  // first token id out of the vocabulary
  token[40] = token[41] = token[42] = static_cast<char>(0x7f);
  EXPECT_THROW(ctx.load_sequence(0, write_bad(token)), FormatError);
  EXPECT_THROW(ctx.load_sequence(-1, good.path.string()), InvalidArgument);
  EXPECT_THROW(ctx.load_sequence(runtime::kMaxSequences, good.path.string()), InvalidArgument);

  // Too few free cells: the loaded sequence needs 40 of 48, 40 are taken.
  runtime::Context small(model_, {.n_ctx = 48, .n_threads = 2});
  small.eval(prompt_, 1);
  EXPECT_THROW(small.load_sequence(0, good.path.string()), InvalidArgument);
  EXPECT_EQ(small.cache().max_pos(0), -1);
}

TEST(SequenceStateModels, RefusesAnotherModel) {
  FERRITE_SHARED_FILE(a_path, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(b_path, "models/llama-2-tiny-random.gguf");
  runtime::Context a(model::Model::load(a_path.string()), {.n_ctx = 64, .n_threads = 2});
  const std::vector<int32_t> toks = {1, 2, 3};
  a.eval(toks);
  TempFile f("other_model");
  a.save_sequence(0, f.path.string());
  runtime::Context b(model::Model::load(b_path.string()), {.n_ctx = 64, .n_threads = 2});
  EXPECT_THROW(b.load_sequence(0, f.path.string()), InvalidArgument);
}

}  // namespace
}  // namespace ferrite
