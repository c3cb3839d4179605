// Context shift for every RoPE kind ferrite has: normal and NeoX pairs,
// partial rotation (gptneox), linear scaling, YaRN, Llama 3's frequency
// factors, LongRoPE (phi3, long factors), gemma3's local (sliding) and global
// layers, gemma2's sliding-window layers.
//
// Two references, neither of them the shift itself:
//  - one layer: a layer-0 key depends only on its token and position, so
//    after llama.cpp's shift (keep the first n_keep, drop half of the rest,
//    slide the tail back) the cache holds what a fresh evaluation of the kept
//    tokens holds, and the next logits must equal that evaluation's;
//  - any depth, nothing kept: attention sees positions only through their
//    differences, so dropping the first d tokens and sliding the rest back
//    by d must give the logits of dropping them and evaluating the next
//    token at its old position.
// Tolerance, relative to the logit scale (max |logit|, 4 to 32 here): the
// shifted keys carry one more f16 rounding (2^-11 relative) and a float
// rotation more than keys computed at their new position; through the
// layers of these random-weight models that moves the logits by up to 9.1e-4
// of their scale (synth-llama; the others 3e-4 or less, measured on an AMD
// EPYC, AVX2). Bound: 2e-3 of the scale. Keys left unrotated miss by more
// than 50 times that (the sensitivity test: 0.16 of the scale).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "model/ref_gemma.h"
#include "runtime/context.h"
#include "runtime/sequence.h"
#include "support/logits.h"
#include "support/test_data.h"
#include "support/tiny_llama.h"

namespace ferrite {
namespace {

using test::logit_magnitude;
using test::max_abs_diff;
using test::random_tokens;

namespace fs = std::filesystem;

constexpr double kShiftRelTol = 2e-3;

std::vector<float> eval_at(runtime::Context& ctx, const std::vector<int32_t>& toks, int32_t start) {
  runtime::Batch b;
  for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], start + static_cast<int32_t>(i), 0, i + 1 == toks.size());
  ctx.decode(b);
  return {ctx.logits(0).begin(), ctx.logits(0).end()};
}

// A model file for a case: a shared synth model, or one written here.
struct ModelCase {
  std::string name;
  std::function<std::string(std::vector<std::shared_ptr<void>>& keep)> make;  // returns the path
};

// synth-phi3 with LongRoPE factors (the long ones apply: the cache is larger
// than the original context).
std::string phi3_longrope(std::vector<std::shared_ptr<void>>& keep) {
  const fs::path src_path = test::shared_path("models/synth/synth-phi3-f32.gguf");
  const gguf::File src = gguf::File::open(src_path.string());
  const int64_t n_pairs = 32;  // synth-phi3: heads of 64
  std::vector<float> short_f(n_pairs), long_f(n_pairs);
  for (int64_t i = 0; i < n_pairs; ++i) {
    short_f[static_cast<size_t>(i)] = 1.0f + 0.1f * static_cast<float>(i);
    long_f[static_cast<size_t>(i)] = 1.0f + 0.7f * static_cast<float>(i);
  }
  gguf::Writer w;
  w.copy_metadata(src);
  w.set("phi3.rope.scaling.original_context_length", gguf::Value::u32(32));
  for (const auto& t : src.tensors()) w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
  w.add_tensor("rope_factors_short.weight", TensorType::F32, {n_pairs});
  w.add_tensor("rope_factors_long.weight", TensorType::F32, {n_pairs});
  auto path = std::make_shared<std::string>(
      (fs::temp_directory_path() / ("ferrite-shift-phi3-" + std::to_string(::getpid()) + ".gguf")).string());
  w.open(*path);
  for (const auto& t : src.tensors()) w.write_tensor_data(t.data, t.n_bytes);
  w.write_tensor_data(short_f.data(), short_f.size() * sizeof(float));
  w.write_tensor_data(long_f.data(), long_f.size() * sizeof(float));
  w.close();
  keep.push_back(std::shared_ptr<void>(path.get(), [path](void*) { std::error_code ec; fs::remove(*path, ec); }));
  return *path;
}

std::string tiny_llama(std::vector<std::shared_ptr<void>>& keep, test::TinyLlamaConfig c) {
  const gguf::File vocab = gguf::File::open(test::shared_path("vocab/ggml-vocab-llama-spm.gguf").string());
  auto g = std::shared_ptr<test::TinyGguf>(test::make_tiny_llama(vocab, c).release());
  keep.push_back(g);
  return g->path().string();
}

std::string tiny_gemma3(std::vector<std::shared_ptr<void>>& keep, int64_t n_layer) {
  test::GemmaConfig c;
  c.version = 3;
  c.n_layer = n_layer;
  c.n_swa = 16;  // wide enough that the window holds keys a shift turned
  c.rope_linear = 8.0;  // the global layers' scaling; the local ones have none
  c.freq_base = 1000000.0;
  c.n_ctx = 256;
  auto g = std::make_shared<test::TinyGemma>(c);
  keep.push_back(g);
  return g->path().string();
}

std::string shared_model(const std::string& rel) { return test::shared_path(rel).string(); }

test::TinyLlamaConfig llama(int64_t n_layer, const std::string& arch = "llama") {
  test::TinyLlamaConfig c;
  c.n_layer = n_layer;
  c.arch = arch;
  return c;
}

test::TinyLlamaConfig yarn(int64_t n_layer) {
  test::TinyLlamaConfig c = llama(n_layer);
  c.rope_scaling = "yarn";
  c.rope_factor = 4.0f;
  c.n_ctx_orig = 64;
  return c;
}

test::TinyLlamaConfig linear(int64_t n_layer) {
  test::TinyLlamaConfig c = llama(n_layer);
  c.rope_scaling = "linear";
  c.rope_factor = 2.0f;
  return c;
}

test::TinyLlamaConfig llama3(int64_t n_layer) {
  test::TinyLlamaConfig c = llama(n_layer);
  c.llama3_freqs = true;
  c.freq_base = 500000.0f;
  return c;
}

std::vector<ModelCase> deep_cases() {
  using K = std::vector<std::shared_ptr<void>>;
  return {
      {"synth_llama", [](K&) { return shared_model("models/synth/synth-llama-f32.gguf"); }},
      {"synth_qwen2_neox", [](K&) { return shared_model("models/synth/synth-qwen2-f32.gguf"); }},
      {"synth_gemma2_sliding", [](K&) { return shared_model("models/synth/synth-gemma2-f32.gguf"); }},
      {"synth_gptneox_partial", [](K&) { return shared_model("models/synth/synth-gptneox-f32.gguf"); }},
      {"synth_falcon", [](K&) { return shared_model("models/synth/synth-falcon-f32.gguf"); }},
      {"synth_starcoder2", [](K&) { return shared_model("models/synth/synth-starcoder2-f32.gguf"); }},
      {"phi3_longrope", [](K& k) { return phi3_longrope(k); }},
      {"tiny_yarn", [](K& k) { return tiny_llama(k, yarn(3)); }},
      {"tiny_linear", [](K& k) { return tiny_llama(k, linear(3)); }},
      {"tiny_llama3_freqs", [](K& k) { return tiny_llama(k, llama3(3)); }},
      {"tiny_gemma3_local_global", [](K& k) { return tiny_gemma3(k, 6); }},
  };
}

std::vector<ModelCase> one_layer_cases() {
  using K = std::vector<std::shared_ptr<void>>;
  return {
      {"llama", [](K& k) { return tiny_llama(k, llama(1)); }},
      {"qwen2_neox", [](K& k) { return tiny_llama(k, llama(1, "qwen2")); }},
      {"yarn", [](K& k) { return tiny_llama(k, yarn(1)); }},
      {"linear", [](K& k) { return tiny_llama(k, linear(1)); }},
      {"llama3_freqs", [](K& k) { return tiny_llama(k, llama3(1)); }},
      {"gemma3_local", [](K& k) { return tiny_gemma3(k, 1); }},
  };
}

std::string case_name(const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name; }

class ShiftAnyDepth : public ::testing::TestWithParam<ModelCase> {};

// Drop the first d tokens and slide the rest back: the next token's logits
// are those of dropping them and going on at the old positions.
TEST_P(ShiftAnyDepth, SlidingBackKeepsRelativePositions) {
  std::vector<std::shared_ptr<void>> keep;
  const std::string path = GetParam().make(keep);
  if (!fs::exists(path)) {
    if (test::in_ci()) FAIL() << "shared test data missing: " << path;
    GTEST_SKIP() << "shared test data missing: " << path;
  }
  auto model = model::Model::load(path);
  const std::vector<int32_t> tokens = random_tokens(40, model->hparams().n_vocab, 11);
  const std::vector<int32_t> next = {tokens[5]};
  constexpr int32_t kDrop = 13;
  const runtime::ContextParams cp{.n_ctx = 128, .n_threads = 2};

  runtime::Context shifted(model, cp);
  shifted.eval(tokens);
  shifted.remove_range(0, 0, kDrop);
  shifted.shift_sequence(0, kDrop, -1, -kDrop);
  ASSERT_EQ(shifted.cache().max_pos(0), 39 - kDrop);
  const std::vector<float> got = eval_at(shifted, next, 40 - kDrop);

  runtime::Context ref(model, cp);
  ref.eval(tokens);
  ref.remove_range(0, 0, kDrop);
  const std::vector<float> want = eval_at(ref, next, 40);
  EXPECT_LT(max_abs_diff(got, want), kShiftRelTol * logit_magnitude(want)) << GetParam().name;
  std::printf("  %s: max |diff| %.3g, logit scale %.3g\n", GetParam().name.c_str(), max_abs_diff(got, want),
              logit_magnitude(want));
}

INSTANTIATE_TEST_SUITE_P(Models, ShiftAnyDepth, ::testing::ValuesIn(deep_cases()), case_name);

class ShiftOneLayer : public ::testing::TestWithParam<ModelCase> {};

// A sequence that outgrows its cells shifts (BOS kept, half of the rest
// dropped) and goes on; with one layer its cache then equals a fresh
// evaluation of the tokens it kept.
TEST_P(ShiftOneLayer, ShiftedCacheEqualsFreshEvaluationOfTheKeptTokens) {
  std::vector<std::shared_ptr<void>> keep;
  auto model = model::Model::load(GetParam().make(keep));
  ASSERT_EQ(model->hparams().n_layer, 1);
  runtime::Context ctx(model, {.n_ctx = 32, .n_threads = 2});
  runtime::Sequence seq(ctx, {.n_keep = 3});
  const std::vector<int32_t> tokens = random_tokens(45, model->hparams().n_vocab, 5);
  seq.prefill(std::vector<int32_t>(tokens.begin(), tokens.begin() + 10));
  std::span<const float> logits;
  for (size_t i = 10; i < tokens.size(); ++i) logits = seq.feed(tokens[i]);
  ASSERT_GT(seq.n_dropped(), 0);
  EXPECT_LE(static_cast<int64_t>(seq.cached().size()), 32);
  // The kept tokens: the first three and the newest, in order.
  const std::vector<int32_t>& kept = seq.cached();
  EXPECT_TRUE(std::equal(kept.begin(), kept.begin() + 3, tokens.begin()));
  EXPECT_TRUE(std::equal(kept.begin() + 3, kept.end(), tokens.end() - static_cast<std::ptrdiff_t>(kept.size() - 3)));
  const std::vector<float> got(logits.begin(), logits.end());

  runtime::Context fresh(model, {.n_ctx = 32, .n_threads = 2});
  const std::span<const float> want = fresh.eval(kept);
  EXPECT_LT(max_abs_diff(got, want), kShiftRelTol * logit_magnitude(want)) << GetParam().name;
  std::printf("  %s: max |diff| %.3g, logit scale %.3g\n", GetParam().name.c_str(), max_abs_diff(got, want),
              logit_magnitude(want));
}

INSTANTIATE_TEST_SUITE_P(Models, ShiftOneLayer, ::testing::ValuesIn(one_layer_cases()), case_name);

// The comparisons above can fail: moving positions without turning the keys
// (a shift of 0 radians) misses the reference by 50 tolerances or more.
TEST(ShiftSensitivity, UnrotatedKeysAreFarOff) {
  std::vector<std::shared_ptr<void>> keep;
  auto model = model::Model::load(tiny_llama(keep, llama(1)));
  const std::vector<int32_t> tokens = random_tokens(40, model->hparams().n_vocab, 11);
  const std::vector<int32_t> next = {tokens[5]};
  runtime::Context moved(model, {.n_ctx = 128, .n_threads = 2});
  eval_at(moved, tokens, 13);  // as if shifted by 13 without rotating
  const std::vector<float> got = eval_at(moved, next, 40);
  runtime::Context ref(model, {.n_ctx = 128, .n_threads = 2});
  ref.eval(tokens);
  const std::vector<float> want = eval_at(ref, next, 40);
  EXPECT_GT(max_abs_diff(got, want), 50 * kShiftRelTol * logit_magnitude(want));
}

// A cache quantized to q8_0 is shifted by dequantizing, turning and
// quantizing each key row: close to the f16 cache's result.
TEST(ShiftQuantizedCache, Q8ZeroKeysTurnToo) {
  std::vector<std::shared_ptr<void>> keep;
  test::TinyLlamaConfig c = llama(2);
  c.n_head_kv = 4;  // K/V rows of 32 values: whole q8_0 blocks
  auto model = model::Model::load(tiny_llama(keep, c));
  const std::vector<int32_t> tokens = random_tokens(40, model->hparams().n_vocab, 3);
  const runtime::ContextParams cp{.n_ctx = 128, .n_threads = 2, .cache_type = TensorType::Q8_0};
  runtime::Context shifted(model, cp);
  shifted.eval(tokens);
  shifted.remove_range(0, 0, 13);
  shifted.shift_sequence(0, 13, -1, -13);
  const std::vector<float> got = eval_at(shifted, {tokens[3]}, 27);
  runtime::Context ref(model, cp);
  ref.eval(tokens);
  ref.remove_range(0, 0, 13);
  const std::vector<float> want = eval_at(ref, {tokens[3]}, 40);
  // q8_0 keys carry about 2^-8 relative rounding, requantized once more:
  // eight times the f16 bound.
  EXPECT_LT(max_abs_diff(got, want), 8 * kShiftRelTol * logit_magnitude(want));
}

}  // namespace
}  // namespace ferrite
