// Embeddings from decoder models (Context::set_embeddings): the kept hidden
// state of a token is the vector that the output matrix turns into its
// logits, so W_out · h (computed here in double from the dequantized
// matrix) must give the logits of an ordinary evaluation; and it is
// RMS-normalised by the output norm. Pooling (mean / cls / last from
// <arch>.pooling_type, written into a copy of the model) follows its
// definition over the sequence's token states, each sequence alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "quant/dequantize.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

// Logits are compared relative to their range: f32 sums vs a double sum;
// a quantized output matrix multiplies 8-bit quantized activations.
constexpr double kRelTolerance = 2e-4;
constexpr double kQuantRelTolerance = 1e-2;
// States of one sequence alone vs the same sequence beside another in one
// batch: the same arithmetic up to the order of cells.
constexpr double kStateTolerance = 1e-4;

const std::vector<int32_t> kPromptA = {1, 403, 207, 69, 114, 280, 261, 45, 300, 17};
const std::vector<int32_t> kPromptB = {1, 88, 411, 25, 130, 7};

// The output matrix (the token embeddings when tied).
const gguf::TensorInfo& output_tensor(const model::Model& m) {
  const gguf::TensorInfo* t = m.file().find_tensor("output.weight");
  return t != nullptr ? *t : m.file().tensor("token_embd.weight");
}

// The output matrix [n_vocab, n_embd], dequantized, in double.
std::vector<double> output_matrix(const model::Model& m) {
  const gguf::TensorInfo* t = &output_tensor(m);
  const int64_t n_embd = t->ne[0], n_vocab = t->ne[1];
  std::vector<float> row(static_cast<size_t>(n_embd));
  std::vector<double> w(static_cast<size_t>(n_embd * n_vocab));
  for (int64_t v = 0; v < n_vocab; ++v) {
    quant::dequantize_row_ref(t->type, t->data + v * t->row_bytes(), row.data(), n_embd);
    std::copy(row.begin(), row.end(), w.begin() + v * n_embd);
  }
  return w;
}

class DecoderEmbeddings : public ::testing::TestWithParam<const char*> {};

TEST_P(DecoderEmbeddings, HiddenStatesTimesOutputMatrixGiveTheLogits) {
  FERRITE_SHARED_FILE(path, GetParam());
  auto model = model::Model::load(path.string());
  const int64_t n_embd = model->hparams().n_embd, n_vocab = model->hparams().n_vocab;
  const int64_t n = static_cast<int64_t>(kPromptA.size());

  runtime::Context plain(model, {.n_ctx = 64, .n_threads = 2});
  const std::span<const float> all = plain.eval(kPromptA, 0, /*all_logits=*/true);
  const std::vector<float> logits(all.begin(), all.end());  // [n, n_vocab]

  runtime::Context ctx(model, {.n_ctx = 64, .n_threads = 2, .embeddings = true});
  ASSERT_TRUE(ctx.embeddings_enabled());
  runtime::Batch batch;
  for (int64_t i = 0; i < n; ++i) batch.add(kPromptA[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(batch);
  EXPECT_THROW(ctx.logits(0), InvalidArgument);

  const std::vector<double> w = output_matrix(*model);
  const TensorType out_type = output_tensor(*model).type;
  const bool float_out = out_type == TensorType::F32 || out_type == TensorType::F16 || out_type == TensorType::BF16;
  const double tolerance = float_out ? kRelTolerance : kQuantRelTolerance;
  const gguf::TensorInfo& norm = model->file().tensor("output_norm.weight");
  std::vector<float> norm_w(static_cast<size_t>(n_embd));
  quant::dequantize_row_ref(norm.type, norm.data, norm_w.data(), n_embd);
  for (int64_t i = 0; i < n; ++i) {
    const std::span<const float> h = ctx.token_embeddings(i);
    ASSERT_EQ(h.size(), static_cast<size_t>(n_embd));
    // RMS-normalised, then scaled by the norm's weights: h / w has RMS 1.
    double ss = 0.0;
    for (int64_t d = 0; d < n_embd; ++d) ss += std::pow(h[d] / static_cast<double>(norm_w[d]), 2);
    EXPECT_NEAR(std::sqrt(ss / static_cast<double>(n_embd)), 1.0, 1e-3) << "token " << i;

    const float* want = logits.data() + i * n_vocab;
    const double scale = std::max(1.0, static_cast<double>(*std::max_element(want, want + n_vocab)) -
                                           *std::min_element(want, want + n_vocab));
    for (int64_t v = 0; v < n_vocab; ++v) {
      double dot = 0.0;
      for (int64_t d = 0; d < n_embd; ++d) dot += w[v * n_embd + d] * h[d];
      ASSERT_NEAR(dot, want[v], tolerance * scale) << "token " << i << " logit " << v;
    }
  }
  EXPECT_THROW(ctx.token_embeddings(n), InvalidArgument);
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);  // the model pools nothing

  // Back to logits: the same as a context that never left that mode.
  ctx.set_embeddings(false);
  ctx.clear();
  const std::span<const float> again = ctx.eval(kPromptA);
  const float* last = logits.data() + (n - 1) * n_vocab;
  for (int64_t v = 0; v < n_vocab; ++v) ASSERT_EQ(again[v], last[v]) << "logit " << v;
}

INSTANTIATE_TEST_SUITE_P(Models, DecoderEmbeddings,
                         ::testing::Values("models/stories260K.gguf", "models/synth/synth-llama-f32.gguf",
                                           "models/synth/synth-qwen2-f32.gguf", "models/synth/synth-llama-moe-f32.gguf",
                                           "models/synth/synth-llama-Q4_K_M.gguf"),
                         [](const auto& info) {
                           std::string s = std::filesystem::path(info.param).stem().string();
                           std::replace_if(s.begin(), s.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return s;
                         });

// A copy of `src` with <arch>.pooling_type set, removed on destruction.
class PooledCopy {
 public:
  PooledCopy(const std::filesystem::path& src, uint32_t pooling)
      : path_(std::filesystem::temp_directory_path() /
              ("ferrite_pooled_" + std::to_string(::getpid()) + "_" + std::to_string(pooling) + ".gguf")) {
    const gguf::File file = gguf::File::open(src.string());
    gguf::Writer w;
    w.copy_metadata(file);
    w.set(file.get("general.architecture").as_string() + ".pooling_type", gguf::Value::u32(pooling));
    for (const gguf::TensorInfo& t : file.tensors()) {
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
    }
    w.open(path_.string());
    for (const gguf::TensorInfo& t : file.tensors()) w.write_tensor_data(t.data, t.n_bytes);
    w.close();
  }
  ~PooledCopy() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Token states [n, n_embd] of one sequence evaluated alone (pooling none).
std::vector<float> token_states(const std::shared_ptr<const model::Model>& model, const std::vector<int32_t>& tokens) {
  runtime::Context ctx(model, {.n_ctx = 64, .n_threads = 1, .embeddings = true});
  runtime::Batch batch;
  for (size_t i = 0; i < tokens.size(); ++i) batch.add(tokens[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(batch);
  std::vector<float> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::span<const float> h = ctx.token_embeddings(static_cast<int64_t>(i));
    out.insert(out.end(), h.begin(), h.end());
  }
  return out;
}

class DecoderPooling : public ::testing::TestWithParam<uint32_t> {};

TEST_P(DecoderPooling, PoolsEachSequenceByDefinition) {
  const uint32_t pooling = GetParam();
  FERRITE_SHARED_FILE(src, "models/stories260K.gguf");
  const PooledCopy copy(src, pooling);
  auto plain = model::Model::load(src.string());
  auto pooled = model::Model::load(copy.path().string());
  const int64_t n_embd = plain->hparams().n_embd;

  // Both sequences in one batch, interleaved, the second only asking for
  // its last token: pooling makes every token an output anyway.
  runtime::Context ctx(pooled, {.n_ctx = 64, .n_threads = 2, .embeddings = true});
  runtime::Batch batch;
  for (size_t i = 0; i < kPromptA.size(); ++i) {
    batch.add(kPromptA[i], static_cast<int32_t>(i), 2, true);
    if (i < kPromptB.size()) batch.add(kPromptB[i], static_cast<int32_t>(i), 6, i + 1 == kPromptB.size());
  }
  ctx.decode(batch);
  EXPECT_EQ(ctx.n_outputs(), batch.size());
  for (const auto& [seq, tokens] : {std::pair{2, kPromptA}, std::pair{6, kPromptB}}) {
    const std::vector<float> states = token_states(plain, tokens);
    const int64_t n = static_cast<int64_t>(tokens.size());
    const std::span<const float> got = ctx.embeddings(seq);
    ASSERT_EQ(got.size(), static_cast<size_t>(n_embd));
    for (int64_t d = 0; d < n_embd; ++d) {
      double want = 0.0;
      if (pooling == 1) {  // mean
        for (int64_t i = 0; i < n; ++i) want += states[i * n_embd + d] / static_cast<double>(n);
      } else {  // cls: the first token; last: the last one
        want = states[(pooling == 2 ? 0 : n - 1) * n_embd + d];
      }
      ASSERT_NEAR(got[d], want, kStateTolerance) << "sequence " << seq << " dim " << d;
    }
  }
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);  // not in the batch
}

INSTANTIATE_TEST_SUITE_P(MeanClsLast, DecoderPooling, ::testing::Values(1u, 2u, 3u));

TEST(DecoderPoolingOverride, ContextPoolingTypeReplacesTheModels) {
  FERRITE_SHARED_FILE(src, "models/stories260K.gguf");
  const PooledCopy copy(src, 3);  // the file says last
  auto plain = model::Model::load(src.string());
  auto pooled = model::Model::load(copy.path().string());
  runtime::Batch batch;
  for (size_t i = 0; i < kPromptA.size(); ++i) batch.add(kPromptA[i], static_cast<int32_t>(i), 0, true);

  // Mean over the plain model's token states (pooling none in its file).
  runtime::Context mean(plain, {.n_ctx = 64, .n_threads = 1, .embeddings = true, .pooling_type = 1});
  EXPECT_EQ(mean.pooling(), model::Pooling::Mean);
  mean.decode(batch);
  const std::vector<float> states = token_states(plain, kPromptA);
  const int64_t n_embd = plain->hparams().n_embd, n = static_cast<int64_t>(kPromptA.size());
  for (int64_t d = 0; d < n_embd; ++d) {
    double want = 0.0;
    for (int64_t i = 0; i < n; ++i) want += states[i * n_embd + d] / static_cast<double>(n);
    ASSERT_NEAR(mean.embeddings(0)[d], want, kStateTolerance) << "dim " << d;
  }
  // None over a pooling model: token states, no pooled vector.
  runtime::Context none(pooled, {.n_ctx = 64, .n_threads = 1, .embeddings = true, .pooling_type = 0});
  none.decode(batch);
  EXPECT_THROW(none.embeddings(0), InvalidArgument);
  for (int64_t d = 0; d < n_embd; ++d) ASSERT_EQ(none.token_embeddings(n - 1)[d], states[(n - 1) * n_embd + d]);
  // Out of range (4 is llama.cpp's rank).
  runtime::Context bad(plain, {.n_ctx = 64, .n_threads = 1, .pooling_type = 4});
  EXPECT_THROW(bad.pooling(), InvalidArgument);
}

TEST(DecoderEmbeddingsErrors, ArchitectureWithoutHiddenStatesIsRefused) {
  FERRITE_SHARED_FILE(path, "models/synth/synth-gpt2-f32.gguf");
  auto model = model::Model::load(path.string());
  EXPECT_THROW(runtime::Context(model, {.n_ctx = 32, .n_threads = 1, .embeddings = true}), InvalidArgument);
  runtime::Context ctx(model, {.n_ctx = 32, .n_threads = 1});
  EXPECT_THROW(ctx.set_embeddings(true), InvalidArgument);
  EXPECT_FALSE(ctx.embeddings_enabled());
  EXPECT_THROW(ctx.embeddings(0), InvalidArgument);  // not in embeddings mode
}

}  // namespace
}  // namespace ferrite
