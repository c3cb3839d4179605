// ferrite_cuda_bench: prompt processing (pp) and token generation (tg)
// throughput with every layer on the GPU, as llama-bench measures them:
// pp = one pass over n_prompt random tokens; tg = n_gen passes of one token.
// Each test runs once to warm up, then `reps` times on an emptied cache; the
// mean tokens/s is printed with the weight bytes a decode step streams.
//
//   ferrite_cuda_bench -m MODEL [-p 512] [-n 128] [-r 3] [-d 0] [-ctk f16] [-ctv f16]
// -d: tg after a prompt of that many tokens (llama-bench's depth; the prompt
// is evaluated before each timed run and not counted); -ctk / -ctv: the K /
// V cache types (runtime::kCacheTypeNames).
//   ferrite_cuda_bench --products ...   (one product per shape: product_bench.cpp)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "runtime/context.h"
#include "runtime/kv_cache.h"
#include "runtime/offload.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int product_bench(int argc, char** argv);

int main(int argc, char** argv) {
  using namespace ferrite;
  if (argc > 1 && std::strcmp(argv[1], "--products") == 0) return product_bench(argc, argv);
  std::string path;
  int n_prompt = 512, n_gen = 128, reps = 3, depth = 0;
  std::string ctk = "f16", ctv = "f16";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "-m") path = argv[i + 1];
    else if (a == "-p") n_prompt = std::atoi(argv[i + 1]);
    else if (a == "-n") n_gen = std::atoi(argv[i + 1]);
    else if (a == "-r") reps = std::atoi(argv[i + 1]);
    else if (a == "-d") depth = std::atoi(argv[i + 1]);
    else if (a == "-ctk") ctk = argv[i + 1];
    else if (a == "-ctv") ctv = argv[i + 1];
  }
  if (path.empty() || n_prompt < 0 || n_gen < 0 || reps <= 0 || depth < 0) {
    std::fprintf(stderr, "usage: ferrite_cuda_bench -m MODEL [-p 512] [-n 128] [-r 3] [-d 0] [-ctk f16] [-ctv f16]\n");
    return 2;
  }
  try {
    auto model = model::Model::load(path);
    // A decode step reads n_expert_used of each expert tensor's n_expert
    // experts (the "_exps" tensors of MoE models) and all of the others.
    const model::HParams& hp = model->hparams();
    uint64_t bytes = 0, all_bytes = 0;
    for (const auto& t : model->file().tensors()) {
      all_bytes += t.n_bytes;
      const bool experts = hp.n_expert > 0 && t.name.find("_exps.") != std::string::npos;
      bytes += experts ? t.n_bytes / static_cast<uint64_t>(hp.n_expert) * static_cast<uint64_t>(hp.n_expert_used)
                       : t.n_bytes;
    }
    runtime::ContextParams cp;
    cp.n_ctx = std::max(n_prompt, depth) + n_gen + 64;
    cp.n_batch = std::max({n_prompt, depth, 1});
    cp.cache_type = runtime::cache_type_from_name(ctk, "-ctk");
    cp.cache_type_v = runtime::cache_type_from_name(ctv, "-ctv");
    cp.n_threads = 1;
    cp.n_gpu_layers = runtime::kAllLayers;
    runtime::Context ctx(model, cp);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int32_t> tok(0, static_cast<int32_t>(ctx.n_vocab() - 1));
    std::printf("model %s: %.2f GiB of tensors (%.2f GiB read per decode step), cache K %s V %s\n", path.c_str(),
                all_bytes / (1024.0 * 1024.0 * 1024.0), bytes / (1024.0 * 1024.0 * 1024.0), ctk.c_str(), ctv.c_str());
    std::vector<int32_t> context(static_cast<size_t>(depth));
    for (auto& t : context) t = tok(rng);
    if (n_prompt > 0) {
      std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
      for (auto& t : prompt) t = tok(rng);
      double total = 0;
      for (int r = 0; r <= reps; ++r) {
        ctx.clear();
        const auto t0 = Clock::now();
        ctx.eval(prompt);
        if (r > 0) total += seconds_since(t0);
      }
      std::printf("pp%d: %.1f t/s\n", n_prompt, n_prompt * reps / total);
    }
    if (n_gen > 0) {
      double total = 0;
      for (int r = 0; r <= reps; ++r) {
        ctx.clear();
        if (depth > 0) ctx.eval(context);
        int32_t next = tok(rng);
        const auto t0 = Clock::now();
        for (int i = 0; i < n_gen; ++i) {
          ctx.eval({&next, 1});
          next = tok(rng);
        }
        if (r > 0) total += seconds_since(t0);
      }
      const double tps = n_gen * reps / total;
      if (depth > 0) std::printf("depth %d: ", depth);
      std::printf("tg%d: %.1f t/s (%.0f GB/s of tensor bytes, %.1f%% of 3.35 TB/s)\n", n_gen, tps, bytes * tps / 1e9,
                  100.0 * bytes * tps / 3.35e12);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
