// The server's prefix cache (issue 24): N clients whose prompts share a long
// system prompt, served at once by an engine of P slots, with the copy of a
// cached prefix across slots on and off (EngineOptions::prefix_cache). It
// prints the prompt tokens the engine evaluated, the time to first token
// (median and worst over the clients) and the wall time of each run.
//
//   build/bench/prefix_cache_bench -m MODEL [--clients 32] [--shared 2000] [--own 16] [--parallel 8]
//                                  [-t THREADS] [-ngl N] [-b BATCH]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "runtime/offload.h"
#include "server/engine.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace ferrite;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  int clients = 32, parallel = 8, threads = 0, ngl = 0;
  int64_t shared = 2000, own = 16, batch = 512;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: prefix_cache_bench -m MODEL [--clients N] [--shared N] [--own N] [--parallel N] "
               "[-t N] [-ngl N] [-b N]\n",
               why);
  std::exit(2);
}

int64_t number(const char* s, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) usage((std::string("bad number: ") + s).c_str());
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(("missing value for " + a).c_str());
    const char* v = argv[++i];
    if (a == "-m") o.model = v;
    else if (a == "--clients") o.clients = static_cast<int>(number(v, 1, 1024));
    else if (a == "--shared") o.shared = number(v, 0, 1 << 20);
    else if (a == "--own") o.own = number(v, 1, 1 << 16);
    else if (a == "--parallel") o.parallel = static_cast<int>(number(v, 1, 256));
    else if (a == "-t") o.threads = static_cast<int>(number(v, 0, 1024));
    else if (a == "-ngl") o.ngl = static_cast<int>(number(v, -1, 100000));
    else if (a == "-b") o.batch = number(v, 1, 1 << 16);
    else usage(("unknown option " + a).c_str());
  }
  if (o.model.empty()) usage("-m MODEL is required");
  return o;
}

struct Run {
  uint64_t evaluated = 0, copied = 0;
  double ttft_median_ms = 0, ttft_max_ms = 0, wall_s = 0;
};

Run serve(const Options& o, const std::shared_ptr<const model::Model>& model,
          const std::shared_ptr<const tokenizer::Tokenizer>& tok, const std::vector<std::vector<int32_t>>& prompts,
          bool prefix_cache) {
  constexpr int64_t kGenerated = 4;
  const int64_t per_slot = o.shared + o.own + kGenerated + 8;
  server::EngineOptions eo;
  eo.n_parallel = o.parallel;
  eo.n_ctx = per_slot * o.parallel;
  eo.n_batch = o.batch;
  eo.n_threads = o.threads;
  eo.max_queue = prompts.size();
  eo.n_gpu_layers = o.ngl < 0 ? runtime::kAllLayers : o.ngl;
  eo.prefix_cache = prefix_cache;
  server::Engine engine(model, tok, eo);
  std::vector<std::shared_ptr<server::Task>> tasks;
  for (const auto& p : prompts) {
    server::GenerationParams gp;
    gp.prompt = p;
    gp.n_predict = kGenerated;
    gp.sampling.temperature = 0.0f;
    gp.n_keep = -1;
    tasks.push_back(std::make_shared<server::Task>(gp));
  }
  const auto t0 = Clock::now();
  for (auto& t : tasks) {
    if (!engine.submit(t)) throw InvalidArgument("the engine refused a request");
  }
  std::vector<double> ttft(tasks.size(), 0.0);
  std::vector<std::thread> readers;
  for (size_t i = 0; i < tasks.size(); ++i) {
    readers.emplace_back([&, i] {
      server::Event ev;
      bool first = true;
      while (tasks[i]->next(ev)) {
        if (first) ttft[i] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        first = false;
        if (ev.final && ev.finish == server::FinishReason::Error) std::fprintf(stderr, "error: %s\n", ev.error.c_str());
      }
    });
  }
  for (auto& r : readers) r.join();
  Run run;
  run.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const server::EngineStats s = engine.stats();
  run.evaluated = s.prompt_tokens;
  run.copied = s.prefix_copied_tokens;
  std::sort(ttft.begin(), ttft.end());
  run.ttft_median_ms = ttft[ttft.size() / 2];
  run.ttft_max_ms = ttft.back();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    auto model = model::Model::load(o.model);
    auto tok = std::make_shared<const tokenizer::Tokenizer>(tokenizer::Tokenizer::from_gguf(model->file()));
    const int64_t n_vocab = model->hparams().n_vocab;
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> id(3, static_cast<int32_t>(std::min<int64_t>(n_vocab, 30000) - 1));
    std::vector<int32_t> shared(static_cast<size_t>(o.shared));
    for (auto& t : shared) t = id(rng);
    std::vector<std::vector<int32_t>> prompts;
    for (int c = 0; c < o.clients; ++c) {
      std::vector<int32_t> p = shared;
      for (int64_t i = 0; i < o.own; ++i) p.push_back(id(rng));
      prompts.push_back(std::move(p));
    }
    std::printf("%d clients, %lld shared + %lld own prompt tokens, %d slots, -t %d, -ngl %d, -b %lld\n", o.clients,
                static_cast<long long>(o.shared), static_cast<long long>(o.own), o.parallel, o.threads, o.ngl,
                static_cast<long long>(o.batch));
    std::printf("| prefix cache | prompt tokens evaluated | copied | TTFT median ms | TTFT max ms | wall s |\n");
    std::printf("|---|---|---|---|---|---|\n");
    for (bool on : {false, true}) {
      const Run r = serve(o, model, tok, prompts, on);
      std::printf("| %s | %llu | %llu | %.1f | %.1f | %.2f |\n", on ? "on" : "off",
                  static_cast<unsigned long long>(r.evaluated), static_cast<unsigned long long>(r.copied),
                  r.ttft_median_ms, r.ttft_max_ms, r.wall_s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prefix_cache_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
