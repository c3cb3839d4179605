// Helpers of the CUDA tests that run whole models: the ferrite binary, a
// quantized copy of a model file, every position's logits of a prompt
// through a context, and the loop over passes (tokens a pass, layers on the
// GPU, exact or fast products) that checks each pass's worst logit error
// against a reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "device_util.h"
#include "model/golden.h"
#include "model/model.h"
#include "runtime/context.h"
#include "runtime/offload.h"

namespace ferrite::cuda::test {

// The ferrite binary: FERRITE_BINARY where it exists, else beside this test
// binary (the device machine runs a copy of both).
inline std::filesystem::path ferrite_binary() {
  if (std::filesystem::exists(FERRITE_BINARY)) return FERRITE_BINARY;
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "ferrite";
}

// `ferrite quantize source <type>` into a temporary file, removed with the
// object. Throws std::runtime_error when the tool fails.
class QuantizedCopy {
 public:
  QuantizedCopy(const std::filesystem::path& source, const std::string& type)
      : path_(std::filesystem::temp_directory_path() / ("ferrite-" + std::to_string(getpid()) + "-" + type + "-" +
                                                        source.filename().string())) {
    const std::string cmd = ferrite_binary().string() + " quantize " + source.string() + " " + path_.string() +
                            " " + type + " > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  ~QuantizedCopy() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  QuantizedCopy(const QuantizedCopy&) = delete;
  QuantizedCopy& operator=(const QuantizedCopy&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Every position's logits [tokens, n_vocab] of tokens through a context of
// n_ctx cells, batches of n_batch, the last n_gpu_layers layers on the GPU.
inline std::vector<float> eval_logits(const std::shared_ptr<const model::Model>& model,
                                      const std::vector<int32_t>& tokens, int64_t n_ctx, int64_t n_batch,
                                      int n_gpu_layers) {
  runtime::ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_threads = 2;
  cp.n_gpu_layers = n_gpu_layers;
  runtime::Context ctx(model, cp);
  const std::span<const float> all = ctx.eval(tokens, 0, true);
  return {all.begin(), all.end()};
}

// One evaluation of a prompt: tokens a pass, layers on the GPU (the last
// ones; runtime::kAllLayers: all), exact or fast products (ProductMode).
struct Pass {
  int64_t n_batch;
  int n_gpu_layers;
  bool exact;
};

// "batch 12, -ngl all, exact"
inline std::string describe(const Pass& p) {
  return "batch " + std::to_string(p.n_batch) + ", -ngl " +
         (p.n_gpu_layers == runtime::kAllLayers ? std::string("all") : std::to_string(p.n_gpu_layers)) + ", " +
         (p.exact ? "exact" : "fast");
}

// The passes most model tests run over a prompt of n tokens: every layer on
// the GPU with the prompt in one pass (prefill kernels) and one token a
// pass (decode kernels, graphs), in both arithmetics; the last layer alone
// on the GPU, the prompt in one pass exact and one token a pass fast.
inline std::vector<Pass> standard_passes(int64_t n) {
  return {{n, runtime::kAllLayers, true},  {1, runtime::kAllLayers, true}, {n, runtime::kAllLayers, false},
          {1, runtime::kAllLayers, false}, {n, 1, true},                    {1, 1, false}};
}

// A pass's error: its logits [tokens, n_vocab] -> the number held to the bound.
using LogitError = std::function<double(const std::vector<float>& logits)>;

// Every logit against a reference [tokens, n_vocab]: the largest |difference|.
inline LogitError against_reference(const std::vector<double>& expected) {
  return [&expected](const std::vector<float>& got) {
    EXPECT_EQ(got.size(), expected.size());
    if (got.size() != expected.size()) return std::numeric_limits<double>::infinity();
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - expected[i]));
    }
    return worst;
  };
}

// The golden's positions' top logits and log-sum-exp (max_logit_error)
// against the logits of its tokens, n_vocab a token: the largest.
inline LogitError against_golden(const ferrite::test::Golden& g, size_t n_vocab) {
  return [&g, n_vocab](const std::vector<float>& got) {
    EXPECT_EQ(got.size(), g.tokens.size() * n_vocab);
    EXPECT_LE(g.positions.size(), g.tokens.size());
    if (got.size() != g.tokens.size() * n_vocab || g.positions.size() > g.tokens.size()) {
      return std::numeric_limits<double>::infinity();
    }
    double worst = 0;
    for (size_t i = 0; i < g.positions.size(); ++i) {
      worst = std::max(worst, ferrite::test::max_logit_error(std::span<const float>(got.data() + i * n_vocab, n_vocab),
                                                             g.positions[i]));
    }
    return worst;
  };
}

// For each pass: the prompt's logits through a context of n_ctx cells
// (eval_logits) with the pass's batch, layers and products; error(logits)
// within exact_tol (exact products) or fast_tol (fast), printed as
// "  <name>, <pass>: <metric> <error>".
inline void check_passes(const std::shared_ptr<const model::Model>& model, const std::vector<int32_t>& tokens,
                         int64_t n_ctx, const std::vector<Pass>& passes, const std::string& name, double exact_tol,
                         double fast_tol, const LogitError& error, const char* metric = "max |logit error|") {
  for (const Pass& p : passes) {
    const ProductMode mode(p.exact);
    const double worst = error(eval_logits(model, tokens, n_ctx, p.n_batch, p.n_gpu_layers));
    const std::string what = name + ", " + describe(p);
    EXPECT_LE(worst, p.exact ? exact_tol : fast_tol) << what;
    std::printf("  %s: %s %.3g\n", what.c_str(), metric, worst);
  }
}

}  // namespace ferrite::cuda::test
