// `ferrite imatrix` end to end on stories260K and War and Peace: both file
// formats, read back by ferrite's reader and used by `ferrite quantize`;
// layer 0's query input checked against its definition computed here from
// the model's weights (embedding rows, RMSNorm, attn_norm); and the same
// text's importance matrix written by llama.cpp's llama-imatrix (build
// c392e50, committed as a fixture) read, compared and used by quantize.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_util.h"
#include "gguf/file.h"
#include "quant/imatrix.h"
#include "support/temp_dir.h"
#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using ferrite::test::run_ferrite;
using ferrite::test::TempDir;

constexpr int kCtx = 128, kChunks = 4;

// Mean over the chunks' tokens of the squared input of blk.0.attn_q, per
// column: rms_norm(token_embd[t]) * attn_norm, each chunk starting with BOS.
std::vector<double> layer0_query_input_mean_square(const ferrite::gguf::File& f, const std::vector<int32_t>& tokens,
                                                   int32_t bos) {
  const auto& embd = f.tensor("token_embd.weight");
  const auto& norm = f.tensor("blk.0.attn_norm.weight");
  const int64_t dim = embd.ne[0];
  const float eps = f.get("llama.attention.layer_norm_rms_epsilon").as_float();
  std::vector<float> w(static_cast<size_t>(dim));
  std::memcpy(w.data(), norm.data, w.size() * 4);
  std::vector<double> sum(static_cast<size_t>(dim), 0.0);
  for (int c = 0; c < kChunks; ++c) {
    for (int j = 0; j < kCtx; ++j) {
      const int32_t t = j == 0 ? bos : tokens[static_cast<size_t>(c * kCtx + j)];
      std::vector<float> x(static_cast<size_t>(dim));
      std::memcpy(x.data(), embd.data + static_cast<uint64_t>(t) * dim * 4, x.size() * 4);
      double ss = 0;
      for (float v : x) ss += static_cast<double>(v) * v;
      const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
      for (int64_t d = 0; d < dim; ++d) {
        const double h = x[d] * inv * w[d];
        sum[d] += h * h;
      }
    }
  }
  for (double& s : sum) s /= kChunks * kCtx;
  return sum;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(b[i], 1e-12));
  return worst;
}

TEST(CliImatrix, BothFormatsMatchTheDefinitionAndQuantize) {
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(text, "text/war-and-peace.txt");
  TempDir tmp("imatrix");
  auto dir = [&](const char* n) { return tmp.file(n); };
  const std::vector<std::string> common = {"imatrix", "-m", model.string(), "-f", text.string(), "-c",
                                           std::to_string(kCtx), "--chunks", std::to_string(kChunks), "-t", "2"};
  auto args = common;
  args.insert(args.end(), {"-o", dir("m.gguf")});
  const auto r1 = run_ferrite(args);
  ASSERT_EQ(r1.status, 0) << r1.err;
  EXPECT_NE(r1.err.find("Final estimate: PPL"), std::string::npos);
  args = common;
  args.insert(args.end(), {"-o", dir("m.dat")});
  const auto r2 = run_ferrite(args);
  ASSERT_EQ(r2.status, 0) << r2.err;

  const ferrite::quant::Imatrix g = ferrite::quant::Imatrix::read(dir("m.gguf"));
  const ferrite::quant::Imatrix d = ferrite::quant::Imatrix::read(dir("m.dat"));
  // stories260K: 5 layers x (q, k, v, output, gate, up, down).
  EXPECT_EQ(g.entries().size(), 35u);
  EXPECT_EQ(d.entries().size(), 35u);
  EXPECT_EQ(d.last_chunk, kChunks);
  EXPECT_EQ(d.dataset, "war-and-peace.txt");
  for (const auto& e : d.entries()) {
    EXPECT_EQ(e.ncall, kChunks) << e.name;
    const std::vector<float>* a = d.importance(e.name);
    const std::vector<float>* b = g.importance(e.name);
    ASSERT_NE(b, nullptr) << e.name;
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) EXPECT_NEAR((*a)[i], (*b)[i], 1e-5 * std::fabs((*b)[i])) << e.name;
  }
  // Q, K and V multiply the same rows.
  EXPECT_EQ(*g.importance("blk.2.attn_q.weight"), *g.importance("blk.2.attn_k.weight"));
  EXPECT_EQ(*g.importance("blk.2.attn_q.weight"), *g.importance("blk.2.attn_v.weight"));

  // Layer 0's query input, from its definition.
  const ferrite::gguf::File f = ferrite::gguf::File::open(model.string());
  const ferrite::tokenizer::Tokenizer tok = ferrite::tokenizer::Tokenizer::from_gguf(f);
  const std::vector<int32_t> tokens = tok.encode(ferrite::test::read_file(text), true, false);
  const std::vector<double> want = layer0_query_input_mean_square(f, tokens, tok.bos());
  EXPECT_LE(max_rel_diff(*g.importance("blk.0.attn_q.weight"), want), 1e-4);

  // quantize takes both; IQ2_XXS refuses to run without one.
  for (const char* m : {"m.gguf", "m.dat"}) {
    const auto q = run_ferrite({"quantize", model.string(), dir("q.gguf"), "IQ2_XXS", "--imatrix", dir(m)});
    EXPECT_EQ(q.status, 0) << q.err;
  }
}

TEST(CliImatrix, LlamaCppsFileAgrees) {
  // llama-imatrix -m stories260K.gguf -f war-and-peace.txt -c 128 --chunks 4
  // (llama.cpp c392e50, AVX2 build, 2 threads).
  FERRITE_SHARED_FILE(model, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(text, "text/war-and-peace.txt");
  const fs::path fixture = fs::path(FERRITE_SOURCE_DIR) / "tests/cli/fixtures/stories260K-llama-imatrix.dat";
  TempDir tmp("imatrix-peer");
  auto dir = [&](const char* n) { return tmp.file(n); };
  const auto r = run_ferrite({"imatrix", "-m", model.string(), "-f", text.string(), "-c", std::to_string(kCtx),
                              "--chunks", std::to_string(kChunks), "-t", "2", "-o", dir("m.dat")});
  ASSERT_EQ(r.status, 0) << r.err;
  const ferrite::quant::Imatrix ours = ferrite::quant::Imatrix::read(dir("m.dat"));
  const ferrite::quant::Imatrix theirs = ferrite::quant::Imatrix::read(fixture.string());
  ASSERT_EQ(ours.entries().size(), theirs.entries().size());
  double worst = 0;
  for (const auto& e : theirs.entries()) {
    const std::vector<float>* a = ours.importance(e.name);
    ASSERT_NE(a, nullptr) << e.name;
    const std::vector<float>* b = theirs.importance(e.name);
    ASSERT_EQ(a->size(), b->size()) << e.name;
    EXPECT_EQ(ours.entries()[0].ncall, e.ncall);
    for (size_t i = 0; i < a->size(); ++i) {
      worst = std::max<double>(worst, std::fabs((*a)[i] - (*b)[i]) / std::max(std::fabs((*b)[i]), 1e-6f));
    }
  }
  std::printf("max relative difference from llama-imatrix: %.3g\n", worst);
  EXPECT_LE(worst, 1e-3);
  // ferrite quantize takes llama.cpp's file.
  const auto q = run_ferrite({"quantize", model.string(), dir("q.gguf"), "IQ2_XXS", "--imatrix", fixture.string()});
  EXPECT_EQ(q.status, 0) << q.err;
}

}  // namespace
