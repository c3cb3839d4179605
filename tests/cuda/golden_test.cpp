// llama.cpp's golden logits through the GPU path (runtime::Context with
// every layer offloaded), with the CPU golden tests' tolerances
// (tests/model/golden_quant_test.cpp, golden_f32_test.cpp): whole prompts in
// one pass (prefill kernels) and one token per pass (decode kernels).
#include <algorithm>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/packed_weights.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

enum class Kind { F32, Float16, Quantized };

constexpr double kF32AbsTol = 1e-3;  // F32 models, every position (absolute)
constexpr double kFloatTol = 1e-4;   // F16 models, every position (relative to the logit scale)
constexpr double kExactTol = 1e-5;   // quantized models, position 0
constexpr double kFlipTol = 5e-2;    // quantized models, every position
constexpr double kMeanTol = 1.5e-2;  // quantized models, mean over positions

// The fast prefill (weights rounded to f16, the activations through the
// CPU's 8-bit blocks then f16, cuBLAS sums; tiled attention with f32
// probabilities) cannot meet the bit-level tolerances above, which the
// exact path keeps. Its own bounds, over the measured errors on the H100
// (p1 prompt, 17 tokens): quantized models are held to kFlipTol at every
// position (measured max 0.032) and kFastMeanTol on the mean (measured
// 0.0122-0.0185, against kMeanTol 0.015 for the exact path); F16 to
// kFastFloatTol (measured 6.9e-4); F32 (only attention differs: the CPU
// rounds probabilities to f16) to kFastF32AbsTol (measured 1.04e-2 llama,
// 4.1e-3 qwen2). The random-weight synth layers amplify the differences.
constexpr double kFastMeanTol = 2.5e-2;
constexpr double kFastFloatTol = 1e-3;
constexpr double kFastF32AbsTol = 2e-2;
double fast_tol(Kind k) {
  return k == Kind::F32 ? kFastF32AbsTol : k == Kind::Float16 ? kFastFloatTol : kFlipTol;
}

struct Case {
  std::string model, golden;
  Kind kind;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.golden; }

// exact: the CPU's arithmetic for every product (the default for the golden
// tolerances); false lets prefill take the f16 cuBLAS products (cuda/linear.h).
void check(const Case& c, int64_t n_batch, int n_gpu_layers = runtime::kAllLayers, bool exact = true) {
  FERRITE_REQUIRE_GPU();
  const cuda::test::ProductMode mode(exact);
  FERRITE_SHARED_FILE(model_path, c.model);
  FERRITE_SHARED_FILE(golden_path, c.golden);
  const test::Golden g = test::load_golden(golden_path);
  // The CPU layers of a partial offload keep llama.cpp's F16 order too in
  // exact mode (model/packed_weights.h: repacked F16 products sum otherwise).
  struct FloatOrder {
    explicit FloatOrder(bool exact) { model::set_float_repack(exact ? std::optional<bool>(false) : std::nullopt); }
    ~FloatOrder() { model::set_float_repack(std::nullopt); }
  } const order(exact);
  auto model = model::Model::load(model_path.string());
  runtime::ContextParams cp;
  cp.n_ctx = 1024;
  cp.n_batch = n_batch;
  cp.n_threads = 1;
  cp.n_gpu_layers = n_gpu_layers;
  runtime::Context ctx(model, cp);
  const std::span<const float> all = ctx.eval(g.tokens, 0, true);
  const size_t nv = static_cast<size_t>(model->hparams().n_vocab);
  ASSERT_EQ(all.size(), g.tokens.size() * nv);
  double worst = 0, total = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < g.positions.size(); ++i) {
    const double err = test::max_logit_error(all.subspan(i * nv, nv), g.positions[i]);
    const double rel = c.kind == Kind::F32 ? err : err / test::logit_scale(g.positions[i]);
    if (rel > worst) worst_at = i;
    worst = std::max(worst, rel);
    total += rel;
    const double tol = !exact                    ? fast_tol(c.kind)
                       : c.kind == Kind::F32       ? kF32AbsTol
                       : c.kind == Kind::Float16 ? kFloatTol
                       : i == 0                  ? kExactTol
                                                 : kFlipTol;
    EXPECT_LE(rel, tol) << c.golden << " position " << i;
  }
  const double mean = total / static_cast<double>(g.positions.size());
  if (c.kind == Kind::Quantized) {
    EXPECT_LE(mean, exact ? kMeanTol : kFastMeanTol) << c.golden;
  }
  std::printf("  %s (batch %lld, -ngl %d, %s products): max error %.3g (position %zu), mean %.3g\n",
              c.golden.c_str(), static_cast<long long>(n_batch), n_gpu_layers, exact ? "exact" : "fast", worst, worst_at,
              mean);
}

std::vector<Case> cases(const char* prompt) {
  std::vector<Case> out;
  out.push_back({"models/synth/synth-llama-F16.gguf", std::string("golden/logits/synth-llama-F16.") + prompt + ".json",
                 Kind::Float16});
  // The mixes hold several types each (Q5_K_M: q5_K and q6_K; Q3_K_M: q3_K,
  // q4_K, q5_K; Q2_K: q2_K and q3_K; every file's token_embd is q6_K).
  // The IQ and TQ files (issue 9) too: IQ2_M and IQ3_M mix IQ types.
  for (const char* t : {"Q8_0", "Q4_0", "Q4_K_M", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_0", "Q5_1", "Q4_1", "Q3_K_M",
                        "Q2_K", "IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_S",
                        "IQ3_M", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0"}) {
    out.push_back({std::string("models/synth/synth-llama-") + t + ".gguf",
                   std::string("golden/logits/synth-llama-") + t + "." + prompt + ".json", Kind::Quantized});
  }
  out.push_back({"models/synth/synth-llama-f32.gguf", std::string("golden/logits/synth-llama-f32.") + prompt + ".json",
                 Kind::F32});
  out.push_back({"models/synth/synth-qwen2-f32.gguf", std::string("golden/logits/synth-qwen2-f32.") + prompt + ".json",
                 Kind::F32});
  return out;
}

class GpuGolden : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGolden, Prefill) { check(GetParam(), 512); }
TEST_P(GpuGolden, OneTokenPerPass) { check(GetParam(), 1); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGolden, ::testing::ValuesIn(cases("p1")));

// The same prompts through the fast prefill (f16 cuBLAS products); the
// errors are printed for bench/cuda/NOTES.md.
class GpuGoldenFastPrefill : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenFastPrefill, Prefill) { check(GetParam(), 512, runtime::kAllLayers, false); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenFastPrefill, ::testing::ValuesIn(cases("p1")));

// One token per pass outside the exact mode: the decode products of any
// summation order (gemv_quant, gemv_f16), the norms and SwiGLU fused with
// their conversions, programmatic dependent launches, the decode graphs; held
// to the fast path's bounds.
class GpuGoldenFastDecode : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenFastDecode, OneTokenPerPass) { check(GetParam(), 1, runtime::kAllLayers, false); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenFastDecode, ::testing::ValuesIn(cases("p1")));

class GpuGoldenSlow : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenSlow, Prefill) { check(GetParam(), 512); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenSlow, ::testing::ValuesIn(cases("p2")));

// Every other architecture of the synth models in ../shared (their llama.cpp
// goldens), through the same operations as on the CPU (backend/ops.h): the
// CPU golden tests' F32 tolerance in exact mode (tests/model/golden_archs_test.cpp),
// the fast bound otherwise; every layer on the GPU and the first one on the CPU.
std::vector<Case> arch_cases(const char* prompt) {
  std::vector<Case> out;
  for (const char* a : {"llama-moe", "qwen2moe", "gemma2", "phi3", "gpt2", "gptneox", "starcoder2", "falcon"}) {
    out.push_back({std::string("models/synth/synth-") + a + "-f32.gguf",
                   std::string("golden/logits/synth-") + a + "-f32." + prompt + ".json", Kind::F32});
  }
  return out;
}

class GpuGoldenArchs : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenArchs, Prefill) { check(GetParam(), 512); }
TEST_P(GpuGoldenArchs, SmallBatches) { check(GetParam(), 7); }
TEST_P(GpuGoldenArchs, OneTokenPerPass) { check(GetParam(), 1); }
TEST_P(GpuGoldenArchs, PartialPrefill) { check(GetParam(), 512, 1); }
TEST_P(GpuGoldenArchs, PartialOneTokenPerPass) { check(GetParam(), 1, 1); }
TEST_P(GpuGoldenArchs, FastPrefill) { check(GetParam(), 512, runtime::kAllLayers, false); }
TEST_P(GpuGoldenArchs, FastOneTokenPerPass) { check(GetParam(), 1, runtime::kAllLayers, false); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenArchs, ::testing::ValuesIn(arch_cases("p1")));

class GpuGoldenArchsSlow : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenArchsSlow, Prefill) { check(GetParam(), 512); }
TEST_P(GpuGoldenArchsSlow, SmallBatches) { check(GetParam(), 7); }
TEST_P(GpuGoldenArchsSlow, OneTokenPerPass) { check(GetParam(), 1); }
TEST_P(GpuGoldenArchsSlow, FastPrefill) { check(GetParam(), 512, runtime::kAllLayers, false); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenArchsSlow, ::testing::ValuesIn(arch_cases("p2")));

TEST(GpuGoldenStories, PrefillAndSmallBatches) {
  for (int64_t b : {512, 7, 1}) check({"models/stories260K.gguf", "golden/logits/stories260K.p0.json", Kind::F32}, b);
}

// Greedy decoding one token at a time from the prompt reproduces llama.cpp's
// 200 tokens (stories260K is trained: its top-2 margins are wide).
TEST(GpuGoldenStories, Greedy) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  FERRITE_SHARED_FILE(golden_path, "golden/logits/stories260K.p0.json");
  const test::Golden g = test::load_golden(golden_path);
  ASSERT_EQ(g.greedy.size(), 200u);
  auto model = model::Model::load(model_path.string());
  runtime::ContextParams cp;
  cp.n_ctx = 1024;
  cp.n_threads = 1;
  cp.n_gpu_layers = runtime::kAllLayers;
  runtime::Context ctx(model, cp);
  std::span<const float> last = ctx.eval(g.tokens);
  for (size_t i = 0; i < g.greedy.size(); ++i) {
    const int32_t next = static_cast<int32_t>(std::max_element(last.begin(), last.end()) - last.begin());
    ASSERT_EQ(next, g.greedy[i]) << "greedy token " << i;
    last = ctx.eval({&next, 1});
  }
}

// Partial offload: the first layers on the CPU, the last ones (and the
// output) on the GPU, the same tolerances.
class GpuGoldenPartial : public ::testing::TestWithParam<Case> {};
TEST_P(GpuGoldenPartial, Prefill) { check(GetParam(), 512, 1); }
TEST_P(GpuGoldenPartial, OneTokenPerPass) { check(GetParam(), 1, 1); }
INSTANTIATE_TEST_SUITE_P(Models, GpuGoldenPartial, ::testing::ValuesIn(cases("p1")));

TEST(GpuGoldenStories, PartialOffloadEverySplit) {
  for (int ngl : {1, 2, 4, 5, 6}) {
    check({"models/stories260K.gguf", "golden/logits/stories260K.p0.json", Kind::F32}, 7, ngl);
  }
}

// Offload refusals are typed errors: a negative layer count, a cache that
// cannot fit (ModelError naming the sizes, before any allocation).
TEST(GpuOffload, RefusesWhatItCannotRun) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  auto model = model::Model::load(model_path.string());
  EXPECT_THROW(runtime::make_offload(*model, 64, -2), InvalidArgument);
  try {
    runtime::make_offload(*model, int64_t{1} << 32, runtime::kAllLayers);
    ADD_FAILURE() << "a cache of 2^32 cells fitted";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("MiB"), std::string::npos) << e.what();
  }
}

// --fit: a tiny model fits entirely; the report names the layer count.
TEST(GpuOffload, FitPicksEveryLayerOfATinyModel) {
  FERRITE_REQUIRE_GPU();
  FERRITE_SHARED_FILE(model_path, "models/stories260K.gguf");
  auto model = model::Model::load(model_path.string());
  const runtime::GpuFit fit = runtime::fit_gpu_layers(*model, {.n_ctx = 256});
  EXPECT_EQ(fit.n_layers, model->hparams().n_layer);
  EXPECT_NE(fit.report.find(std::to_string(model->hparams().n_layer) + " of "), std::string::npos) << fit.report;
}

}  // namespace
}  // namespace ferrite
