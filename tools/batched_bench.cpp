// `ferrite batched-bench -m MODEL [-ngl N|all] [-c CTX] [-b BATCH] [-npp 128]
//  [-ntg 128] [-npl 1,8,32] [-t N]`
// Aggregate throughput of the server's engine (continuous batching, no HTTP):
// for each count B of -npl, B requests of -npp prompt tokens each generate
// -ntg tokens at once. The columns follow llama-batched-bench's: T_PP runs
// from the submissions until every request has its first token (prompts,
// batched), T_TG from there until the last one ends; S_PP = B * PP / T_PP,
// S_TG = B * (TG - 1) / T_TG, S = B * (PP + TG) / T. The engine mixes prompt
// chunks and generation in its steps, so the split is approximate; S is not.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "model_options.h"
#include "runtime/kv_cache.h"
#include "load_bar.h"
#include "server/engine.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct BatchedOptions {
  ModelOptions model;
  int npp = 128;
  int ntg = 128;
  std::string npl = "1,8,32";
};

std::vector<int> parse_counts(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1) throw InvalidArgument("-npl takes positive counts like 1,8,32, not '" + s + "'");
    out.push_back(v);
  }
  if (out.empty()) throw InvalidArgument("-npl is empty");
  return out;
}

// Prompt tokens for request `r` of a run: ordinary ids (past the first
// kSkipIds, where vocabularies keep their control tokens), different for
// every request so that no slot reuses another run's cached prefix.
std::vector<int32_t> prompt_tokens(int64_t n_vocab, int npp, int64_t r) {
  constexpr int64_t kSkipIds = 300;
  constexpr int64_t kStride = 7919;  // a prime: consecutive ids spread over the vocabulary
  const int64_t span = std::max<int64_t>(n_vocab - kSkipIds, 1);
  std::vector<int32_t> p(static_cast<size_t>(npp));
  for (int j = 0; j < npp; ++j) {
    p[static_cast<size_t>(j)] = static_cast<int32_t>(std::min(n_vocab - 1, kSkipIds + (r * 104729 + j * kStride) % span));
  }
  return p;
}

struct Timing {
  double first = 0;  // seconds from the submissions to the request's first token
  double end = 0;    // to its final event
  int generated = 0;
  std::string error;
};

int run_batched(const BatchedOptions& opt) {
  if (opt.npp < 1 || opt.ntg < 2) throw InvalidArgument("-npp must be at least 1 and -ntg at least 2");
  const std::vector<int> counts = parse_counts(opt.npl);
  const int max_npl = *std::max_element(counts.begin(), counts.end());
  const std::string path = model_path(opt.model);
  std::shared_ptr<const model::Model> model = load_model_file(opt.model, path);
  auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
  const int64_t need = static_cast<int64_t>(max_npl) * (opt.npp + opt.ntg + 1);  // +1: the engine keeps a cell spare per slot
  const int64_t n_ctx = opt.model.n_ctx > 0 ? opt.model.n_ctx : need;
  if (n_ctx < need) {
    throw InvalidArgument("-c " + std::to_string(n_ctx) + " is too small: " + std::to_string(max_npl) + " x (" +
                          std::to_string(opt.npp) + " + " + std::to_string(opt.ntg) + " + 1) = " + std::to_string(need) +
                          " cells");
  }
  const TensorType type_k = runtime::cache_type_from_name(opt.model.cache_type_k, "--cache-type-k");
  const TensorType type_v = runtime::cache_type_from_name(opt.model.cache_type_v, "--cache-type-v");
  // --fit: the engine's context (a sliding window for each of its max_npl slots).
  const int ngl = gpu_layers(opt.model, *model,
                             {.n_ctx = n_ctx, .n_batch = opt.model.n_batch, .cache_type = type_k,
                              .cache_type_v = type_v, .n_seq_max = max_npl});
  server::Engine engine(model, tok,
                        {.n_parallel = max_npl, .n_ctx = n_ctx, .n_batch = opt.model.n_batch,
                         .n_threads = opt.model.n_threads, .max_queue = static_cast<size_t>(max_npl), .after_step = {},
                         .cache_type_k = type_k, .cache_type_v = type_v, .n_gpu_layers = ngl});
  std::printf("| %6s | %6s | %4s | %6s | %8s | %9s | %8s | %9s | %8s | %9s |\n", "PP", "TG", "B", "N_KV", "T_PP s",
              "S_PP t/s", "T_TG s", "S_TG t/s", "T s", "S t/s");
  std::printf("|--------|--------|------|--------|----------|-----------|----------|-----------|----------|-----------|\n");
  int64_t request = 0;
  std::vector<std::string> breakdown;
  for (int b : counts) {
    std::vector<std::shared_ptr<server::Task>> tasks;
    for (int i = 0; i < b; ++i) {
      server::GenerationParams p;
      p.prompt = prompt_tokens(model->hparams().n_vocab, opt.npp, request++);
      p.sampling.temperature = 0.0f;
      p.n_predict = opt.ntg;
      p.ignore_eos = true;
      tasks.push_back(std::make_shared<server::Task>(std::move(p)));
    }
    std::vector<Timing> times(static_cast<size_t>(b));
    const server::EngineStats before = engine.stats();
    const auto t0 = Clock::now();
    for (auto& t : tasks) {
      if (!engine.submit(t)) throw InvalidArgument("the engine refused a request (queue full)");
    }
    std::vector<std::thread> readers;
    for (int i = 0; i < b; ++i) {
      readers.emplace_back([&, i] {
        Timing& tm = times[static_cast<size_t>(i)];
        server::Event ev;
        bool first = true;
        while (tasks[static_cast<size_t>(i)]->next(ev)) {
          const double s = std::chrono::duration<double>(Clock::now() - t0).count();
          if (first) tm.first = s;
          first = false;
          if (ev.final) {
            tm.end = s;
            tm.generated = ev.timings.n_generated;
            if (ev.finish == server::FinishReason::Error) tm.error = ev.error;
            break;
          }
        }
      });
    }
    for (std::thread& r : readers) r.join();
    double t_pp = 0, t_end = 0;
    for (const Timing& tm : times) {
      if (!tm.error.empty()) throw InvalidArgument("a request failed: " + tm.error);
      if (tm.generated != opt.ntg) throw InvalidArgument("a request generated " + std::to_string(tm.generated) + " tokens, not -ntg");
      t_pp = std::max(t_pp, tm.first);
      t_end = std::max(t_end, tm.end);
    }
    const double t_tg = t_end - t_pp;
    const double n_pp = static_cast<double>(b) * opt.npp, n_tg = static_cast<double>(b) * (opt.ntg - 1);
    std::printf("| %6d | %6d | %4d | %6lld | %8.3f | %9.2f | %8.3f | %9.2f | %8.3f | %9.2f |\n", opt.npp, opt.ntg, b,
                static_cast<long long>(static_cast<int64_t>(b) * (opt.npp + opt.ntg)), t_pp,
                t_pp > 0 ? n_pp / t_pp : 0.0, t_tg, t_tg > 0 ? n_tg / t_tg : 0.0, t_end,
                t_end > 0 ? (n_pp + static_cast<double>(b) * opt.ntg) / t_end : 0.0);
    const server::EngineStats after = engine.stats();
    breakdown.push_back("B=" + std::to_string(b) + ": " + std::to_string(after.steps - before.steps) + " steps, model " +
                        std::to_string(static_cast<int64_t>(after.decode_ms - before.decode_ms)) + " ms, sampling " +
                        std::to_string(static_cast<int64_t>(after.sample_ms - before.sample_ms)) + " ms");
    std::fflush(stdout);
  }
  // Where the time went (the engine thread; the rest is scheduling and handing out results).
  for (const std::string& line : breakdown) std::printf("%s\n", line.c_str());
  return 0;
}


const CommandRegistrar kBatchedBench(
    {"batched-bench", "Aggregate throughput of many concurrent requests (the server's engine, no HTTP)",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<BatchedOptions>();
       add_model_options(sub, opt->model, kModelArgument | kGpuOptions | kCacheOptions | kMemoryOptions);
       sub.add_option("-c,--ctx-size", opt->model.n_ctx,
                      "Cache cells shared by the requests (0: exactly what the largest -npl needs)");
       sub.add_option("-b,--batch-size", opt->model.n_batch, "Tokens per engine step");
       sub.add_option("-t,--threads", opt->model.n_threads, "Threads (0: all CPUs)");
       sub.add_option("--npp", opt->npp, "Prompt tokens per request (also -npp)");
       sub.add_option("--ntg", opt->ntg, "Tokens generated per request (also -ntg)");
       sub.add_option("--npl", opt->npl, "Concurrent requests, comma-separated, e.g. 1,8,32 (also -npl)");
       return [opt] { return run_batched(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
