// `ferrite perplexity -m MODEL -f TEXT [-c N] [-b N] [-t N] [--chunks K]`:
// perplexity of a text the way llama.cpp's llama-perplexity computes it. The
// text is tokenized once (with BOS), cut into chunks of N tokens; each chunk
// is evaluated from an empty cache with its first token replaced by BOS, and
// only the second half is scored: the logits at position j predict token
// j + 1 for j in [N/2, N-2]. Prints the running estimate per chunk and
// "Final estimate: PPL = P +/- E" (E from the spread of the token NLLs).
// --kl-divergence-base FILE saves every scored position's log-probabilities
// (kl_base_file.h); adding --kl-divergence compares another model (a
// quantization) with them instead: PPL ratio, KL divergence and token
// probability statistics as llama-perplexity prints them (kl_stats.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "kl_base_file.h"
#include "kl_stats.h"
#include "load_bar.h"
#include "model/model.h"
#include "model_options.h"
#include "runtime/kv_cache.h"
#include "runtime/context.h"
#include "text_scoring.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct PerplexityOptions {
  ModelOptions model;  // -m, -ngl, -ctk/-ctv, --mlock (the context options are perplexity's own)
  std::string file;
  int64_t n_ctx = 512;
  bool n_ctx_given = false;
  int64_t n_batch = 2048;
  int n_threads = 0;
  int64_t max_chunks = -1;
  std::string kl_base;        // --kl-divergence-base FILE
  bool kl_divergence = false; // compare with the base file instead of writing it
};

int run_perplexity(PerplexityOptions opt) {
  if (opt.kl_divergence && opt.kl_base.empty()) {
    throw InvalidArgument("--kl-divergence needs --kl-divergence-base FILE (written by an earlier run)");
  }
  if (!opt.kl_divergence && opt.file.empty()) throw InvalidArgument("-f TEXT is required");
  // With --kl-divergence the base file fixes the tokens and the chunk size.
  std::unique_ptr<KlBaseReader> base;
  if (opt.kl_divergence) {
    base = std::make_unique<KlBaseReader>(opt.kl_base);
    const auto base_ctx = static_cast<int64_t>(base->header().n_ctx);
    if (opt.n_ctx_given && opt.n_ctx != base_ctx) {
      throw InvalidArgument("-c " + std::to_string(opt.n_ctx) + " differs from the base file's chunk size " +
                            std::to_string(base_ctx) + " (" + opt.kl_base + ")");
    }
    opt.n_ctx = base_ctx;
  }
  if (opt.n_ctx < 4) throw InvalidArgument("-c must be at least 4");

  const std::string path = model_path(opt.model);
  std::shared_ptr<const model::Model> model = load_model_file(opt.model, path);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  std::vector<int32_t> tokens;
  if (!opt.file.empty()) tokens = tok.encode(read_text_file(opt.file), /*add_special=*/true, /*parse_special=*/false);
  const auto n_vocab = static_cast<uint64_t>(model->hparams().n_vocab);
  if (base) {
    const KlBaseHeader& h = base->header();
    if (h.n_vocab != n_vocab) {
      throw InvalidArgument("the model has " + std::to_string(n_vocab) + " tokens, the base file (" + opt.kl_base +
                            ") " + std::to_string(h.n_vocab) + ": not the same vocabulary");
    }
    if (!opt.file.empty() && tokens != h.tokens) {
      throw InvalidArgument("the text of -f is not the one the base file (" + opt.kl_base + ") was computed on");
    }
    tokens = h.tokens;
  }

  const int64_t n_ctx = opt.n_ctx;
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (base) n_chunks = std::min(n_chunks, static_cast<int64_t>(base->header().n_chunks));
  if (opt.max_chunks >= 0) n_chunks = std::min(n_chunks, opt.max_chunks);
  if (n_chunks == 0) {
    throw InvalidArgument("the text has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of " +
                          std::to_string(n_ctx));
  }
  std::unique_ptr<KlBaseWriter> writer;
  if (!opt.kl_base.empty() && !base) {
    writer = std::make_unique<KlBaseWriter>(
        opt.kl_base, KlBaseHeader{n_vocab, static_cast<uint64_t>(n_ctx), static_cast<uint64_t>(n_chunks), tokens});
  }
  const TensorType type_k = runtime::cache_type_from_name(opt.model.cache_type_k, "--cache-type-k");
  const TensorType type_v = runtime::cache_type_from_name(opt.model.cache_type_v, "--cache-type-v");
  runtime::ContextParams cp{.n_ctx = n_ctx,
                            .n_batch = std::max(opt.n_batch, n_ctx),
                            .n_threads = opt.n_threads,
                            .cache_type = type_k,
                            .cache_type_v = type_v};
  cp.n_gpu_layers = gpu_layers(opt.model, *model, cp);
  load_lora(opt.model, *model, cp);
  runtime::Context ctx(model, cp);
  std::fprintf(stderr, "perplexity: %zu tokens, %lld chunks of %lld, scoring the second half of each\n",
               tokens.size(), static_cast<long long>(n_chunks), static_cast<long long>(n_ctx));

  const int64_t first = n_ctx / 2;
  const bool add_bos = tok.add_bos() && tok.bos() >= 0;
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  KlStats kl;
  std::vector<float> log_probs(n_vocab), base_row(base ? n_vocab : 0);  // [n_vocab]
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (add_bos) chunk[0] = tok.bos();
    ctx.clear();
    ctx.eval(chunk, 0, /*all_logits=*/true);
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const int32_t target = tokens[static_cast<size_t>(c * n_ctx + j + 1)];
      const double v = negative_log_prob(ctx.logits(j), target);
      nll += v;
      nll2 += v * v;
      ++count;
      if (writer || base) log_softmax(ctx.logits(j), log_probs);
      if (writer) writer->write_row(log_probs);
      if (base) {
        base->read_row(base_row);
        kl.add(compare_token(base_row, log_probs, target));
      }
    }
    if (c == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "perplexity: %.2f s per chunk\n", s);
    }
    std::fprintf(stderr, "[%lld]%.4f,", static_cast<long long>(c + 1), std::exp(nll / static_cast<double>(count)));
  }
  std::fprintf(stderr, "\n");
  if (writer) writer->finish();
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  double err = 0.0;
  if (count > 1) {
    const double var = nll2 / static_cast<double>(count) - mean * mean;
    err = ppl * std::sqrt(std::max(0.0, var) / static_cast<double>(count - 1));
  }
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
  if (writer) std::printf("Saved the base log-probabilities of %lld tokens to %s\n", static_cast<long long>(count),
                          opt.kl_base.c_str());
  if (base) std::printf("\n%s", kl.report().c_str());
  return 0;
}

const CommandRegistrar kPerplexity({"perplexity", "Perplexity of a text file (llama.cpp's method)",
                                    [](CLI::App& sub) -> std::function<int()> {
                                      auto opt = std::make_shared<PerplexityOptions>();
                                      add_model_options(sub, opt->model,
                                                        kModelArgument | kGpuOptions | kCacheOptions | kMemoryOptions |
                                                            kLoraOptions);
                                      sub.add_option("-f,--file", opt->file,
                                                     "Text file (with --kl-divergence: optional, checked "
                                                     "against the base file's tokens)");
                                      CLI::Option* c = sub.add_option("-c,--ctx-size", opt->n_ctx, "Tokens per chunk");
                                      sub.add_option("-b,--batch-size", opt->n_batch, "Tokens per forward pass");
                                      sub.add_option("-t,--threads", opt->n_threads, "Threads (0: all CPUs)");
                                      sub.add_option("--chunks", opt->max_chunks, "Score at most this many chunks");
                                      sub.add_option("--kl-divergence-base", opt->kl_base,
                                                     "File of the base model's log-probabilities: written, or "
                                                     "read with --kl-divergence");
                                      sub.add_flag("--kl-divergence", opt->kl_divergence,
                                                   "Compare with the base file's distributions (KL divergence)");
                                      return [opt, c] {
                                        PerplexityOptions o = *opt;
                                        o.n_ctx_given = c->count() > 0;
                                        return run_perplexity(o);
                                      };
                                    }});

}  // namespace
}  // namespace ferrite::tools
