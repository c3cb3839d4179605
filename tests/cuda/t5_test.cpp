// t5 and t5encoder on the GPU (the CPU test: tests/runtime/t5_test.cpp):
// the tiny files of tests/model/tiny_t5.h against llama.cpp c392e50's goldens
// (tests/model/golden/t5-*.json), every layer on the GPU and only the last
// one, the decoder tokens in one pass and one by one, in the exact and the
// fast arithmetic, within the CPU test's 1e-3. The GPU kernels this runs and
// their CPU twins: relu (cpu relu_inplace), attention_seq with T5's
// bidirectional bias (CpuBackend::encoder_attention), the exact cache
// attention with its causal bias (cpu attention_generic), attention_cross
// (CpuBackend::cross_attention); each is also compared with the CPU context
// on the same file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "model/tiny_t5.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite {
namespace {

using test::T5Variant;

constexpr double kTol = 1e-3;

std::filesystem::path golden_path(T5Variant v, int prompt) {
  return std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden" /
         (test::t5_golden_name(v) + ".p" + std::to_string(prompt) + ".json");
}

runtime::ContextParams params(int ngl) {
  runtime::ContextParams cp;
  cp.n_ctx = 64;
  cp.n_batch = 64;
  cp.n_threads = 2;
  cp.n_gpu_layers = ngl;
  return cp;
}

std::vector<float> decode(runtime::Context& ctx, int prompt, bool steps) {
  ctx.encode(test::t5_encoder_prompt(prompt), 0);
  const std::vector<int32_t> dec = test::t5_decoder_prompt(prompt);
  if (!steps) {
    const std::span<const float> all = ctx.eval(dec, 0, true);
    return {all.begin(), all.end()};
  }
  std::vector<float> out;
  for (int32_t t : dec) {
    const std::span<const float> l = ctx.eval(std::span<const int32_t>(&t, 1), 0);
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

double worst(const std::vector<float>& logits, int64_t nv, const test::Golden& g) {
  double w = 0;
  EXPECT_EQ(logits.size(), g.positions.size() * static_cast<size_t>(nv));
  for (size_t i = 0; i < g.positions.size() && (i + 1) * static_cast<size_t>(nv) <= logits.size(); ++i) {
    w = std::max(w, test::max_logit_error(std::span<const float>(logits.data() + i * nv, nv), g.positions[i]));
  }
  return w;
}

TEST(GpuT5, DecoderMatchesLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  for (T5Variant v : {T5Variant::Relu, T5Variant::Gated}) {
    const auto tiny = test::make_tiny_t5(v);
    auto model = model::Model::load(tiny->path().string());
    for (int p : {1, 2}) {
      const test::Golden g = test::load_golden(golden_path(v, p));
      runtime::Context cpu_ctx(model, params(0));
      const std::vector<float> cpu = decode(cpu_ctx, p, false);
      for (int ngl : {runtime::kAllLayers, 1}) {
        for (bool exact : {true, false}) {
          const cuda::test::ProductMode mode(exact);
          runtime::Context ctx(model, params(ngl));
          const std::vector<float> gpu = decode(ctx, p, false);
          const double one = worst(gpu, ctx.n_vocab(), g);
          double vs_cpu = 0;
          for (size_t i = 0; i < gpu.size() && i < cpu.size(); ++i) vs_cpu = std::max(vs_cpu, double{std::fabs(gpu[i] - cpu[i])});
          ctx.clear();
          const double steps = worst(decode(ctx, p, true), ctx.n_vocab(), g);
          const std::string what = test::t5_golden_name(v) + " p" + std::to_string(p) + ", -ngl " +
                                   (ngl < 0 ? "all" : std::to_string(ngl)) + (exact ? ", exact" : ", fast");
          EXPECT_LE(one, kTol) << what << ", one pass";
          EXPECT_LE(steps, kTol) << what << ", one token at a time";
          EXPECT_LE(vs_cpu, kTol) << what << ", against the CPU";
          std::printf("  %s: max |logit error| %.3g one pass, %.3g by steps; %.3g from the CPU\n", what.c_str(), one,
                      steps, vs_cpu);
        }
      }
    }
  }
}

TEST(GpuT5, EncoderMatchesLlamaCpp) {
  FERRITE_REQUIRE_GPU();
  const auto tiny = test::make_tiny_t5(T5Variant::Encoder);
  auto model = model::Model::load(tiny->path().string());
  for (int p : {1, 2}) {
    const nlohmann::json j = nlohmann::json::parse(test::read_file(golden_path(T5Variant::Encoder, p)));
    const auto rows = j.at("embeddings").get<std::vector<std::vector<double>>>();
    const auto tokens = test::t5_encoder_prompt(p);
    runtime::Context ctx(model, params(runtime::kAllLayers));
    runtime::Batch b;
    for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], static_cast<int32_t>(i), 0, true);
    ctx.decode(b);
    ASSERT_EQ(rows.size(), tokens.size());
    double w = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::span<const float> s = ctx.token_embeddings(static_cast<int64_t>(i));
      for (size_t d = 0; d < s.size(); ++d) w = std::max(w, std::fabs(s[d] - rows[i][d]));
    }
    EXPECT_LE(w, kTol) << "p" << p;
    std::printf("  t5encoder p%d on the GPU: max |state error| %.3g\n", p, w);
  }
}

}  // namespace
}  // namespace ferrite
