// The in-memory form of a sequence's saved state (save_sequence_bytes /
// load_sequence_bytes): the same bytes as the file form, the next token's
// logits after a restore bit-equal to an uninterrupted run, bad bytes
// refused with typed errors.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

class SequenceBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
    FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p2.json");
    model_ = model::Model::load(model_path.string());
    auto all = nlohmann::json::parse(test::read_file(golden_path)).at("tokens").get<std::vector<int32_t>>();
    prompt_.assign(all.begin(), all.begin() + kPrompt);
    next_ = all[kPrompt];
  }
  static constexpr size_t kPrompt = 30;
  std::shared_ptr<const model::Model> model_;
  std::vector<int32_t> prompt_;
  int32_t next_ = 0;
};

TEST_F(SequenceBytes, RestoredLogitsEqualUninterruptedRun) {
  runtime::Context plain(model_, {.n_ctx = 96, .n_threads = 2});
  plain.eval(prompt_);
  const auto ref_span = plain.eval({&next_, 1});
  const std::vector<float> ref(ref_span.begin(), ref_span.end());

  std::string bytes;
  {
    runtime::Context first(model_, {.n_ctx = 96, .n_threads = 2});
    first.eval(prompt_);
    bytes = first.save_sequence_bytes(0, prompt_);
    // The same bytes as the file form.
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() / ("ferrite_seqbytes_" + std::to_string(::getpid()) + ".bin");
    first.save_sequence(0, file.string(), prompt_);
    const std::string from_file = test::read_file(file);
    std::filesystem::remove(file);
    EXPECT_EQ(bytes, from_file);
  }
  runtime::Context second(model_, {.n_ctx = 96, .n_threads = 2});
  EXPECT_EQ(second.load_sequence_bytes(0, bytes), prompt_);
  EXPECT_EQ(second.cache().max_pos(0), static_cast<int32_t>(kPrompt) - 1);
  const auto got = second.eval({&next_, 1});
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << "logit " << i;
}

TEST_F(SequenceBytes, RefusesBadBytes) {
  runtime::Context ctx(model_, {.n_ctx = 96, .n_threads = 2});
  ctx.eval(prompt_);
  const std::string bytes = ctx.save_sequence_bytes(0, prompt_);
  ctx.clear();
  EXPECT_THROW(ctx.load_sequence_bytes(0, ""), FormatError);
  EXPECT_THROW(ctx.load_sequence_bytes(0, bytes.substr(0, bytes.size() - 1)), FormatError);
  EXPECT_THROW(ctx.load_sequence_bytes(0, bytes + "x"), FormatError);
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_THROW(ctx.load_sequence_bytes(0, magic), FormatError);
  EXPECT_THROW(ctx.load_sequence_bytes(runtime::kMaxSequences, bytes), InvalidArgument);
  EXPECT_THROW(ctx.save_sequence_bytes(-1), InvalidArgument);
  // Failed loads leave the sequence empty; a good one still loads.
  EXPECT_EQ(ctx.cache().max_pos(0), -1);
  EXPECT_EQ(ctx.load_sequence_bytes(0, bytes), prompt_);
}

}  // namespace
}  // namespace ferrite
