// `ferrite perplexity --kl-divergence-base FILE [--kl-divergence]`: a model
// against itself has KLD 0 and the same top token everywhere; synth-llama
// Q8_0 against its F32 base gives the KL divergence computed here
// independently from the runtime's logits (llama-perplexity's chunking:
// BOS first, the second half of each chunk scored); damaged, foreign or
// mismatched base files are clear errors.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace {

using ferrite::test::run_ferrite;
namespace fs = std::filesystem;

constexpr int64_t kCtx = 64;
constexpr int64_t kChunks = 3;
constexpr size_t kTextBytes = 4000;  // enough tokens for kChunks chunks with either vocabulary

class CliPerplexityKld : public ::testing::Test {
 protected:
  void SetUp() override {
    FERRITE_SHARED_FILE(book, "text/war-and-peace.txt");
    dir_ = fs::temp_directory_path() / ("ferrite-kld-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ifstream in(book, std::ios::binary);
    std::string text(kTextBytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text_ = (dir_ / "text.txt").string();
    std::ofstream(text_, std::ios::binary) << text;
    base_ = (dir_ / "base.kld").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  ferrite::test::CommandResult write_base(const std::string& model) {
    return run_ferrite({"perplexity", "-m", model, "-f", text_, "-c", std::to_string(kCtx), "--chunks",
                        std::to_string(kChunks), "-t", "2", "--kl-divergence-base", base_});
  }
  ferrite::test::CommandResult compare(const std::string& model, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"perplexity", "-m", model, "-t", "2", "--kl-divergence-base", base_,
                                     "--kl-divergence"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_ferrite(args);
  }

  fs::path dir_;
  std::string text_, base_;
};

// The first number after `label` in the report.
double number_after(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) {
    ADD_FAILURE() << "no '" << label << "' in:\n" << out;
    return NAN;
  }
  return std::stod(out.substr(at + label.size()));
}

// log-softmax in double.
std::vector<double> log_probs(std::span<const float> logits) {
  double max = logits[0];
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0.0;
  for (float v : logits) sum += std::exp(v - max);
  std::vector<double> out(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = logits[i] - max - std::log(sum);
  return out;
}

TEST_F(CliPerplexityKld, ModelAgainstItselfIsZero) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  const auto w = write_base(model.string());
  ASSERT_EQ(w.status, 0) << w.err;
  // The file holds kChunks * (kCtx/2 - 1) rows of 512 floats after its header and tokens.
  EXPECT_GT(fs::file_size(base_), static_cast<uintmax_t>(kChunks * (kCtx / 2 - 1) * 512 * 4));
  const auto r = compare(model.string(), {"-f", text_});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NEAR(number_after(r.out, "Mean    KLD:"), 0.0, 1e-6) << r.out;
  EXPECT_NEAR(number_after(r.out, "Maximum KLD:"), 0.0, 1e-6) << r.out;
  EXPECT_DOUBLE_EQ(number_after(r.out, "Same top p:"), 100.0) << r.out;
  EXPECT_NEAR(number_after(r.out, "Mean PPL(Q)/PPL(base)         :"), 1.0, 1e-6) << r.out;
  EXPECT_NEAR(number_after(r.out, "RMS Δp    :"), 0.0, 1e-3) << r.out;
  // The plain estimate is printed as without --kl-divergence.
  EXPECT_EQ(number_after(r.out, "Final estimate: PPL ="), number_after(w.out, "Final estimate: PPL ="));
}

TEST_F(CliPerplexityKld, Q8AgainstF32MatchesIndependentComputation) {
  FERRITE_SHARED_FILE(f32, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(q8, "models/synth/synth-llama-Q8_0.gguf");
  const auto w = write_base(f32.string());
  ASSERT_EQ(w.status, 0) << w.err;
  const auto r = compare(q8.string());
  ASSERT_EQ(r.status, 0) << r.err;

  // Independent: both models' logits over the same chunks, compared here.
  using namespace ferrite;
  auto base_model = model::Model::load(f32.string());
  auto q_model = model::Model::load(q8.string());
  const auto tok = tokenizer::Tokenizer::from_gguf(base_model->file());
  std::ifstream in(text_, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<int32_t> tokens = tok.encode(text, true, false);
  ASSERT_GE(static_cast<int64_t>(tokens.size()), kChunks * kCtx);
  runtime::Context cb(base_model, {.n_ctx = kCtx, .n_batch = kCtx, .n_threads = 2});
  runtime::Context cq(q_model, {.n_ctx = kCtx, .n_batch = kCtx, .n_threads = 2});
  double sum_kld = 0.0, max_kld = 0.0;
  int64_t n = 0, same_top = 0;
  for (int64_t c = 0; c < kChunks; ++c) {
    std::vector<int32_t> chunk(tokens.begin() + c * kCtx, tokens.begin() + (c + 1) * kCtx);
    chunk[0] = tok.bos();
    cb.clear();
    cq.clear();
    cb.eval(chunk, 0, true);
    cq.eval(chunk, 0, true);
    for (int64_t j = kCtx / 2; j < kCtx - 1; ++j) {
      const std::vector<double> lb = log_probs(cb.logits(j)), lq = log_probs(cq.logits(j));
      double kld = 0.0;
      for (size_t i = 0; i < lb.size(); ++i) kld += std::exp(lb[i]) * (lb[i] - lq[i]);
      sum_kld += kld;
      max_kld = std::max(max_kld, kld);
      same_top += std::max_element(lb.begin(), lb.end()) - lb.begin() == std::max_element(lq.begin(), lq.end()) - lq.begin();
      ++n;
    }
  }
  const double mean_kld = sum_kld / static_cast<double>(n);
  ASSERT_GT(mean_kld, 0.0) << "Q8_0 should differ from F32";
  // The report prints 6 decimals; base log-probs are stored as float.
  EXPECT_NEAR(number_after(r.out, "Mean    KLD:"), mean_kld, 2e-6 + 1e-3 * mean_kld) << r.out;
  EXPECT_NEAR(number_after(r.out, "Maximum KLD:"), max_kld, 2e-6 + 1e-3 * max_kld) << r.out;
  EXPECT_NEAR(number_after(r.out, "Same top p:"), 100.0 * same_top / static_cast<double>(n), 1e-3) << r.out;
}

TEST_F(CliPerplexityKld, DamagedOrForeignBaseFilesAreClearErrors) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(other, "models/synth/synth-llama-f32.gguf");
  const auto w = write_base(model.string());
  ASSERT_EQ(w.status, 0) << w.err;
  auto expect_error = [](const ferrite::test::CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.status, 0);
    EXPECT_LT(r.status, 128) << "killed by a signal";
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  };
  expect_error(compare(other.string()), "vocabulary");
  expect_error(compare(model.string(), {"-c", "32"}), "chunk size");
  {
    const std::string other_text = (dir_ / "other.txt").string();
    std::ofstream(other_text) << std::string(3000, 'x');
    expect_error(compare(model.string(), {"-f", other_text}), "not the one");
  }
  expect_error(run_ferrite({"perplexity", "-m", model.string(), "-f", text_, "--kl-divergence"}),
               "--kl-divergence-base");
  const std::string saved = base_ + ".orig";
  fs::copy_file(base_, saved);
  // Truncated by one byte.
  fs::resize_file(base_, fs::file_size(saved) - 1);
  expect_error(compare(model.string()), "truncated");
  // A wrong magic.
  fs::copy_file(saved, base_, fs::copy_options::overwrite_existing);
  {
    std::fstream f(base_, std::ios::in | std::ios::out | std::ios::binary);
    f.write("NOTAKLD!", 8);
  }
  expect_error(compare(model.string()), "magic");
  // A huge vocabulary size in the header.
  fs::copy_file(saved, base_, fs::copy_options::overwrite_existing);
  {
    std::fstream f(base_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(16);
    const uint64_t huge = uint64_t{1} << 60;
    f.write(reinterpret_cast<const char*>(&huge), sizeof huge);
  }
  expect_error(compare(model.string()), "n_vocab");
  // A NaN in the last row.
  fs::copy_file(saved, base_, fs::copy_options::overwrite_existing);
  {
    std::fstream f(base_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(saved) - sizeof(float)));
    const float nan = NAN;
    f.write(reinterpret_cast<const char*>(&nan), sizeof nan);
  }
  expect_error(compare(model.string()), "corrupt");
  expect_error(run_ferrite({"perplexity", "-m", model.string(), "--kl-divergence-base",
                            (dir_ / "missing.kld").string(), "--kl-divergence"}),
               "missing.kld");
}

}  // namespace
