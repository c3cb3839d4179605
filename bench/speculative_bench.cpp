// Speculative decoding (issue 28): greedy generation of N tokens with and
// without a drafter, interleaved R times, on a prompt file or a built-in
// one ("code": a C function to continue; "repeat": a paragraph said twice).
// Prints tokens/s of each (median and range), the speed-up, the acceptance
// rate, and whether the two outputs are the same token for token.
//
//   build/bench/speculative_bench -m TARGET [-md DRAFT | --ngram N] [--prompt code|repeat|@FILE]
//                                 [-n 128] [-r 3] [--draft-max 16] [--draft-p-min 0.75] [-t THREADS]
//                                 [-ngl N] [-ngld N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/model.h"
#include "runtime/offload.h"
#include "runtime/speculative.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace ferrite;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string model, draft, prompt = "code";
  int ngram = 0, n = 128, repeats = 3, draft_max = 16, threads = 0, ngl = 0, ngld = 0;
  float p_min = 0.75f;
};

const char* kCode =
    "static int sum(const int* a, int n) {\n  int s = 0;\n  for (int i = 0; i < n; ++i) s += a[i];\n  return s;\n}\n\n"
    "static int max(const int* a, int n) {\n  int m = a[0];\n  for (int i = 1; i < n; ++i) if (a[i] > m) m = a[i];\n"
    "  return m;\n}\n\nstatic int min(const int* a, int n) {\n";
const char* kRepeat =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One "
    "day, she";

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "%s\nusage: speculative_bench -m TARGET [-md DRAFT | --ngram N] [--prompt code|repeat|@FILE] [-n N] "
               "[-r N] [--draft-max N] [--draft-p-min P] [-t N] [-ngl N] [-ngld N]\n",
               why.c_str());
  std::exit(2);
}

int number(const std::string& s, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0' || v < lo || v > hi) usage("bad number: " + s);
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("missing value for " + a);
    const std::string v = argv[++i];
    if (a == "-m") o.model = v;
    else if (a == "-md") o.draft = v;
    else if (a == "--ngram") o.ngram = number(v, 1, 64);
    else if (a == "--prompt") o.prompt = v;
    else if (a == "-n") o.n = number(v, 1, 1 << 16);
    else if (a == "-r") o.repeats = number(v, 1, 100);
    else if (a == "--draft-max") o.draft_max = number(v, 1, 256);
    else if (a == "--draft-p-min") o.p_min = std::strtof(v.c_str(), nullptr);
    else if (a == "-t") o.threads = number(v, 0, 1024);
    else if (a == "-ngl") o.ngl = v == "all" ? runtime::kAllLayers : number(v, 0, 100000);
    else if (a == "-ngld") o.ngld = v == "all" ? runtime::kAllLayers : number(v, 0, 100000);
    else usage("unknown option " + a);
  }
  if (o.model.empty()) usage("no target model (-m)");
  if (o.draft.empty() == (o.ngram == 0)) usage("give a draft model (-md) or --ngram N, one of them");
  return o;
}

std::string prompt_text(const std::string& p) {
  if (p == "code") return kCode;
  if (p == "repeat") return kRepeat;
  if (p.empty() || p[0] != '@') usage("--prompt is code, repeat or @FILE");
  std::ifstream in(p.substr(1), std::ios::binary);
  if (!in) usage("cannot read " + p.substr(1));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Run {
  std::vector<int32_t> tokens;
  double seconds = 0;
  runtime::SpeculativeStats stats;
};

Run generate(runtime::Context& ctx, runtime::GenerationVocab& vocab, const std::vector<int32_t>& prompt, int n,
             runtime::Drafter* drafter, int draft_max) {
  runtime::GenerationParams p;
  p.sampling.temperature = 0;
  p.n_predict = n;
  p.ignore_eos = true;
  runtime::Sequence seq(ctx, {});
  runtime::Generation gen(vocab, p, {.n_ctx = static_cast<int32_t>(ctx.n_ctx()), .n_ctx_train = 0}, prompt);
  std::span<const float> logits = seq.prefill(prompt);
  std::unique_ptr<runtime::Speculation> spec;
  if (drafter != nullptr) spec = std::make_unique<runtime::Speculation>(*drafter, runtime::SpeculativeParams{.n_max = draft_max});
  Run r;
  const auto t0 = Clock::now();
  while (!gen.done()) {
    for (const runtime::GenerationStep& s : runtime::generation_steps(seq, gen, logits, spec.get())) {
      if (s.token >= 0) r.tokens.push_back(s.token);
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (spec) r.stats = spec->stats();
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int bench(const Options& o) {
  auto target = model::Model::load(o.model);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(target->file());
  const std::vector<int32_t> prompt = tok.encode(prompt_text(o.prompt), true, false);
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + o.n + 64;
  runtime::Context ctx(target, {.n_ctx = n_ctx, .n_threads = o.threads, .n_gpu_layers = o.ngl});
  std::unique_ptr<runtime::Context> dctx;
  std::unique_ptr<runtime::Drafter> drafter;
  if (!o.draft.empty()) {
    auto dm = model::Model::load(o.draft);
    runtime::check_draft_vocab(tok, tokenizer::Tokenizer::from_gguf(dm->file()));
    dctx = std::make_unique<runtime::Context>(dm, runtime::ContextParams{.n_ctx = n_ctx, .n_threads = o.threads,
                                                                         .n_gpu_layers = o.ngld});
    drafter = std::make_unique<runtime::ModelDrafter>(*dctx, runtime::DraftModelParams{.p_min = o.p_min});
  } else {
    drafter = std::make_unique<runtime::NgramDrafter>(runtime::NgramParams{.size_n = o.ngram, .size_m = o.draft_max});
  }
  runtime::GenerationVocab vocab(tok);
  generate(ctx, vocab, prompt, 8, nullptr, 0);  // warm-up
  std::vector<double> plain_tps, spec_tps;
  Run plain, spec;
  for (int r = 0; r < o.repeats; ++r) {
    plain = generate(ctx, vocab, prompt, o.n, nullptr, 0);
    spec = generate(ctx, vocab, prompt, o.n, drafter.get(), o.draft_max);
    plain_tps.push_back(static_cast<double>(plain.tokens.size()) / plain.seconds);
    spec_tps.push_back(static_cast<double>(spec.tokens.size()) / spec.seconds);
  }
  const auto [pl, ph] = std::minmax_element(plain_tps.begin(), plain_tps.end());
  const auto [sl, sh] = std::minmax_element(spec_tps.begin(), spec_tps.end());
  std::printf("target %s, %s, prompt %s (%zu tokens), %d tokens, %d runs, backend %s\n", o.model.c_str(),
              o.draft.empty() ? ("ngram-simple n=" + std::to_string(o.ngram)).c_str() : ("draft " + o.draft).c_str(),
              o.prompt.c_str(), prompt.size(), o.n, o.repeats, ctx.backend_name());
  std::printf("plain:       %8.1f tokens/s (%.1f .. %.1f)\n", median(plain_tps), *pl, *ph);
  std::printf("speculative: %8.1f tokens/s (%.1f .. %.1f)\n", median(spec_tps), *sl, *sh);
  std::printf("speed-up %.2fx; drafted %lld, accepted %lld (%.1f%%), %lld verifications; same tokens: %s\n",
              median(spec_tps) / median(plain_tps), static_cast<long long>(spec.stats.n_drafted),
              static_cast<long long>(spec.stats.n_accepted), 100.0 * spec.stats.acceptance(),
              static_cast<long long>(spec.stats.n_rounds), spec.tokens == plain.tokens ? "yes" : "NO");
  return spec.tokens == plain.tokens ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "speculative_bench: %s\n", e.what());
    return 1;
  }
}
