// t5 and t5encoder (model/arch_t5.cpp) through the runtime's encode step
// (Context::encode, llama.cpp's llama_encode) against llama.cpp c392e50 on
// the tiny random files of tests/model/tiny_t5.h: the decoder's logits
// after encoding a source (every position's top-20 and log-sum-exp, the
// decoder tokens in one pass and one by one through the cache) and the
// encoder's final states, within 1e-3 (F32 weights; the decoder's cache is
// f16 in both engines). Each T5 feature is shown to matter: the same weights
// without the relative position bias, or with the usual 1/sqrt(head_dim)
// attention scale, miss the goldens.
//
// Regenerating the goldens (llama.cpp built outside the repository):
//   build/tests/test_runtime --gtest_also_run_disabled_tests
//       --gtest_filter='T5.DISABLED_Write' with FERRITE_TINY_OUT=DIR
//   golden_dump -m DIR/tiny-t5-relu.gguf --enc <t5_encoder_prompt(N)> -i <t5_decoder_prompt(N)>
//       --no-bos -t 2 > t5-relu.pN.json  (the same for t5-gated)
//   golden_dump -m DIR/tiny-t5encoder.gguf -i <t5_encoder_prompt(N)> --no-bos --embd -t 2 > t5encoder.pN.json
// (the decoder's first token is the decoder start token, 0, as llama.cpp's
// examples start it after llama_encode). The committed goldens came from
// /work/peers/tools/golden_dump.cpp built by build.sh against llama.cpp
// c392e50's AVX2 static libraries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cpu/attention/rel_pos_bias.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/tiny_t5.h"
#include "runtime/context.h"
#include "runtime/generation.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"

namespace ferrite {
namespace {

using test::T5Quirk;
using test::T5Variant;

constexpr double kTolerance = 1e-3;
constexpr double kQuirkSeen = 0.05;

std::filesystem::path golden_path(T5Variant v, int prompt) {
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
         (test::t5_golden_name(v) + ".p" + std::to_string(prompt) + ".json");
}

std::shared_ptr<const model::Model> load(const test::TinyGguf& g) { return model::Model::load(g.path().string()); }

runtime::ContextParams params() { return {.n_ctx = 64, .n_batch = 64, .n_threads = 2}; }

double worst(const std::vector<float>& logits, int64_t nv, const test::Golden& g) {
  double w = 0;
  EXPECT_EQ(logits.size(), g.positions.size() * static_cast<size_t>(nv));
  for (size_t i = 0; i < g.positions.size() && (i + 1) * static_cast<size_t>(nv) <= logits.size(); ++i) {
    w = std::max(w, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
  }
  return w;
}

// The decoder's logits of every token after encoding the source into `seq`:
// in one pass, or (steps) one token at a time.
std::vector<float> decode(runtime::Context& ctx, int prompt, int seq, bool steps) {
  ctx.encode(test::t5_encoder_prompt(prompt), seq);
  const std::vector<int32_t> dec = test::t5_decoder_prompt(prompt);
  if (!steps) {
    const std::span<const float> all = ctx.eval(dec, seq, true);
    return {all.begin(), all.end()};
  }
  std::vector<float> out;
  for (int32_t t : dec) {
    const std::span<const float> l = ctx.eval(std::span<const int32_t>(&t, 1), seq);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

struct Case {
  T5Variant variant;
  int prompt;
};

std::string case_name(const ::testing::TestParamInfo<Case>& i) {
  std::string n = test::t5_golden_name(i.param.variant) + "_p" + std::to_string(i.param.prompt);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

class T5Golden : public ::testing::TestWithParam<Case> {};

TEST_P(T5Golden, DecoderLogitsAfterEncode) {
  const Case& c = GetParam();
  const test::Golden g = test::load_golden(golden_path(c.variant, c.prompt));
  const nlohmann::json j = nlohmann::json::parse(test::read_file(golden_path(c.variant, c.prompt)));
  ASSERT_EQ(j.at("encoder_tokens").get<std::vector<int32_t>>(), test::t5_encoder_prompt(c.prompt));
  ASSERT_EQ(g.tokens, test::t5_decoder_prompt(c.prompt)) << "the golden was made for other tokens";
  const auto tiny = test::make_tiny_t5(c.variant);
  runtime::Context ctx(load(*tiny), params());
  ASSERT_TRUE(ctx.has_encoder());
  EXPECT_EQ(ctx.decoder_start_token(1), test::kT5DecoderStart);
  const double one_pass = worst(decode(ctx, c.prompt, 0, false), ctx.n_vocab(), g);
  ctx.clear();
  const double steps = worst(decode(ctx, c.prompt, 0, true), ctx.n_vocab(), g);
  EXPECT_LE(one_pass, kTolerance);
  EXPECT_LE(steps, kTolerance);
  std::printf("  %s p%d: max |logit error| %.3g one pass, %.3g one token at a time\n",
              test::t5_golden_name(c.variant).c_str(), c.prompt, one_pass, steps);
}

// Two sequences, each with its own source: the cross-attention reads only its sequence's encoder rows.
TEST_P(T5Golden, TwoSequencesKeepTheirSources) {
  const Case& c = GetParam();
  const int other = 3 - c.prompt;
  const test::Golden g = test::load_golden(golden_path(c.variant, c.prompt));
  const auto tiny = test::make_tiny_t5(c.variant);
  runtime::Context ctx(load(*tiny), params());
  ctx.encode(test::t5_encoder_prompt(c.prompt), 1);
  (void)decode(ctx, other, 0, false);  // encodes the other source into sequence 0 afterwards
  const std::vector<int32_t> dec = test::t5_decoder_prompt(c.prompt);
  const std::span<const float> all = ctx.eval(dec, 1, true);
  const double err = worst({all.begin(), all.end()}, ctx.n_vocab(), g);
  EXPECT_LE(err, kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Tiny, T5Golden,
                         ::testing::Values(Case{T5Variant::Relu, 1}, Case{T5Variant::Relu, 2},
                                           Case{T5Variant::Gated, 1}, Case{T5Variant::Gated, 2}),
                         case_name);

// The encoder alone (t5encoder): every token's final state, pooling none.
double encoder_error(const test::TinyGguf& tiny, int prompt) {
  const nlohmann::json j = nlohmann::json::parse(test::read_file(golden_path(T5Variant::Encoder, prompt)));
  const auto tokens = test::t5_encoder_prompt(prompt);
  EXPECT_EQ(j.at("tokens").get<std::vector<int32_t>>(), tokens);
  const auto rows = j.at("embeddings").get<std::vector<std::vector<double>>>();
  runtime::Context ctx(load(tiny), params());
  runtime::Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
  ctx.decode(b);
  EXPECT_EQ(rows.size(), tokens.size());
  double w = 0;
  for (size_t i = 0; i < rows.size() && i < tokens.size(); ++i) {
    const std::span<const float> s = ctx.token_embeddings(static_cast<int64_t>(i));
    EXPECT_EQ(rows[i].size(), s.size());
    for (size_t d = 0; d < s.size() && d < rows[i].size(); ++d) w = std::max(w, std::fabs(s[d] - rows[i][d]));
  }
  return w;
}

TEST(T5, EncoderStates) {
  const auto tiny = test::make_tiny_t5(T5Variant::Encoder);
  for (int p : {1, 2}) {
    const double err = encoder_error(*tiny, p);
    EXPECT_LE(err, kTolerance) << "p" << p;
    std::printf("  t5encoder p%d: max |state error| %.3g\n", p, err);
  }
}

// The relative position bias and the unscaled attention, each neutralised, miss the goldens.
TEST(T5, QuirksMatter) {
  for (T5Quirk q : {T5Quirk::NoRelBias, T5Quirk::Scaled}) {
    const char* what = q == T5Quirk::NoRelBias ? "no relative position bias" : "scores scaled by 1/sqrt(head_dim)";
    for (T5Variant v : {T5Variant::Relu, T5Variant::Gated}) {
      const test::Golden g = test::load_golden(golden_path(v, 1));
      const auto plain = test::make_tiny_t5(v, q);
      runtime::Context ctx(load(*plain), params());
      const double err = worst(decode(ctx, 1, 0, false), ctx.n_vocab(), g);
      EXPECT_GT(err, kQuirkSeen) << test::t5_golden_name(v) << ": " << what;
      std::printf("  %s with %s: max |logit error| %.3g\n", test::t5_golden_name(v).c_str(), what, err);
    }
    const auto plain = test::make_tiny_t5(T5Variant::Encoder, q);
    const double err = encoder_error(*plain, 1);
    EXPECT_GT(err, kQuirkSeen) << "t5encoder: " << what;
    std::printf("  t5encoder with %s: max |state error| %.3g\n", what, err);
  }
}

// Buckets of T5's definition (32 buckets, max distance 128), worked by hand:
// bidirectional, 16 per direction, 8 exact; causal, 16 exact, then
// 16 + floor(log(d / 16) / log(8) * 16).
TEST(T5, RelativePositionBuckets) {
  EXPECT_EQ(cpu::rel_pos_bucket(0, 32, true), 0);
  EXPECT_EQ(cpu::rel_pos_bucket(-1, 32, true), 1);
  EXPECT_EQ(cpu::rel_pos_bucket(1, 32, true), 17);
  EXPECT_EQ(cpu::rel_pos_bucket(7, 32, true), 23);
  EXPECT_EQ(cpu::rel_pos_bucket(8, 32, true), 24);     // 8 + floor(log(1) ...) = 8
  EXPECT_EQ(cpu::rel_pos_bucket(-17, 32, true), 10);   // 8 + floor(log(17 / 8) / log(16) * 8) = 8 + 2
  EXPECT_EQ(cpu::rel_pos_bucket(-127, 32, true), 15);  // 8 + floor(7.98) = 15
  EXPECT_EQ(cpu::rel_pos_bucket(200, 32, true), 31);   // clamped to the last
  EXPECT_EQ(cpu::rel_pos_bucket(5, 32, false), 0);     // a later key: distance 0
  EXPECT_EQ(cpu::rel_pos_bucket(-15, 32, false), 15);
  EXPECT_EQ(cpu::rel_pos_bucket(-20, 32, false), 17);  // 16 + floor(log(1.25) / log(8) * 16) = 16 + 1
  EXPECT_EQ(cpu::rel_pos_bucket(-64, 32, false), 26);  // 16 + floor(log(4) / log(8) * 16) = 16 + 10
  EXPECT_EQ(cpu::rel_pos_bucket(-1000, 32, false), 31);
}

// What `ferrite run` does with an encoder-decoder: encode the prompt, then
// generate greedily from the decoder start token through a Sequence. The
// first token is llama.cpp's top token after the start token (the golden's
// position 0); every generated token is the top one of the logits of the
// tokens before it evaluated again in one pass.
TEST(T5, GreedyGenerationFromTheDecoderStart) {
  const test::Golden g = test::load_golden(golden_path(T5Variant::Gated, 1));
  const auto tiny = test::make_tiny_t5(T5Variant::Gated);
  auto m = load(*tiny);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(m->file());
  runtime::GenerationVocab vocab(tok);
  runtime::Context ctx(m, params());
  ctx.encode(test::t5_encoder_prompt(1), 0);
  const std::vector<int32_t> start = {ctx.decoder_start_token(tok.bos())};
  ASSERT_EQ(start[0], test::kT5DecoderStart);
  runtime::GenerationParams gp;
  gp.sampling.temperature = 0;
  gp.n_predict = 12;
  gp.ignore_eos = true;
  runtime::Generation gen(vocab, gp, {.n_ctx = 64, .n_ctx_train = 512}, start);
  runtime::Sequence seq(ctx, {});
  std::span<const float> logits = seq.prefill(start);
  std::vector<int32_t> out;
  while (!gen.done()) {
    const runtime::GenerationStep st = seq.step(gen, logits);
    if (st.token >= 0) out.push_back(st.token);
  }
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(out[0], g.positions[0].top[0].first) << "llama.cpp's greedy first token";
  std::vector<int32_t> all = start;
  all.insert(all.end(), out.begin(), out.end() - 1);
  runtime::Context again(m, params());
  again.encode(test::t5_encoder_prompt(1), 0);
  const std::span<const float> rows = again.eval(all, 0, true);
  const auto nv = static_cast<size_t>(again.n_vocab());
  for (size_t i = 0; i < out.size(); ++i) {
    const float* r = rows.data() + i * nv;
    EXPECT_EQ(std::max_element(r, r + nv) - r, out[i]) << "token " << i;
  }
}

TEST(T5, DecodeNeedsEncodeFirst) {
  const auto tiny = test::make_tiny_t5(T5Variant::Relu);
  runtime::Context ctx(load(*tiny), params());
  const std::vector<int32_t> dec = test::t5_decoder_prompt(1);
  EXPECT_THROW(ctx.eval(dec, 0), InvalidArgument);
  EXPECT_EQ(ctx.cache().used(), 0) << "a refused decode leaves the cache as it was";
  EXPECT_THROW(ctx.encode(std::vector<int32_t>{}, 0), InvalidArgument);
  EXPECT_THROW(ctx.encode(std::vector<int32_t>{5, 400}, 0), InvalidArgument);
  EXPECT_THROW(ctx.encode(std::vector<int32_t>{5}, -1), InvalidArgument);
  ctx.encode(test::t5_encoder_prompt(1), 0);
  EXPECT_THROW(ctx.eval(dec, 1), InvalidArgument) << "sequence 1 has no source";
  EXPECT_NO_THROW(ctx.eval(dec, 0));
}

TEST(T5, EncodeRefusedByOtherModels) {
  const auto tiny = test::make_tiny_t5(T5Variant::Encoder);
  runtime::Context ctx(load(*tiny), params());
  EXPECT_FALSE(ctx.has_encoder());
  EXPECT_THROW(ctx.encode(test::t5_encoder_prompt(1), 0), InvalidArgument);
}

TEST(T5, BadFilesAreModelErrors) {
  // Without the bucket count, or without layer 0's attn_rel_b: refused by name.
  test::TinyGguf g("t5", 7);
  test::tiny_family_detail::add_vocab(g);
  g.set_u32("embedding_length", 64);
  g.set_u32("block_count", 1);
  g.set_u32("attention.head_count", 4);
  g.add("token_embd.weight", {64, test::tiny_family_detail::kVocab}, 1.0f);
  g.write();
  EXPECT_THROW(model::Model::load(g.path().string()), ModelError);
}

TEST(T5, DISABLED_Write) {
  const char* out = std::getenv("FERRITE_TINY_OUT");
  ASSERT_NE(out, nullptr) << "set FERRITE_TINY_OUT";
  for (T5Variant v : {T5Variant::Relu, T5Variant::Gated, T5Variant::Encoder}) {
    const auto tiny = test::make_tiny_t5(v);
    std::filesystem::copy_file(tiny->path(), std::filesystem::path(out) / ("tiny-" + test::t5_golden_name(v) + ".gguf"),
                               std::filesystem::copy_options::overwrite_existing);
  }
}

}  // namespace
}  // namespace ferrite
