// `ferrite perplexity -m MODEL -f TEXT [-c N] [-b N] [-t N] [--chunks K]`:
// perplexity of a text the way llama.cpp's llama-perplexity computes it. The
// text is tokenized once (with BOS), cut into chunks of N tokens; each chunk
// is evaluated from an empty cache with its first token replaced by BOS, and
// only the second half is scored: the logits at position j predict token
// j + 1 for j in [N/2, N-2]. Prints the running estimate per chunk and
// "Final estimate: PPL = P +/- E" (E from the spread of the token NLLs).
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
#include "model/model.h"
#include "model_path.h"
#include "runtime/context.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct PerplexityOptions {
  std::string model;
  std::string file;
  int64_t n_ctx = 512;
  int64_t n_batch = 2048;
  int n_threads = 0;
  int64_t max_chunks = -1;
};

// -log p(target) from one position's logits, in double.
double negative_log_prob(std::span<const float> logits, int32_t target) {
  float max = logits[0];
  for (float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(v - max);  // f32 exp, f64 sum (as llama.cpp)
  return -(static_cast<double>(logits[static_cast<size_t>(target)] - max) - std::log(sum));
}

int run_perplexity(const PerplexityOptions& opt) {
  if (opt.n_ctx < 4) throw InvalidArgument("-c must be at least 4");
  std::ifstream in(opt.file, std::ios::binary);
  if (!in) throw IoError(opt.file, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  const std::string path = resolve_model_argument(opt.model);
  std::shared_ptr<const model::Model> model = model::Model::load(path);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  const std::vector<int32_t> tokens = tok.encode(text, /*add_special=*/true, /*parse_special=*/false);

  const int64_t n_ctx = opt.n_ctx;
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (opt.max_chunks >= 0) n_chunks = std::min(n_chunks, opt.max_chunks);
  if (n_chunks == 0) {
    throw InvalidArgument("the text has " + std::to_string(tokens.size()) + " tokens, fewer than one chunk of " +
                          std::to_string(n_ctx));
  }
  runtime::Context ctx(model, {.n_ctx = n_ctx, .n_batch = std::max(opt.n_batch, n_ctx), .n_threads = opt.n_threads});
  std::fprintf(stderr, "perplexity: %zu tokens, %lld chunks of %lld, scoring the second half of each\n",
               tokens.size(), static_cast<long long>(n_chunks), static_cast<long long>(n_ctx));

  const int64_t first = n_ctx / 2;
  const bool add_bos = tok.add_bos() && tok.bos() >= 0;
  double nll = 0.0, nll2 = 0.0;
  int64_t count = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (add_bos) chunk[0] = tok.bos();
    ctx.clear();
    ctx.eval(chunk, 0, /*all_logits=*/true);
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const double v = negative_log_prob(ctx.logits(j), tokens[static_cast<size_t>(c * n_ctx + j + 1)]);
      nll += v;
      nll2 += v * v;
      ++count;
    }
    if (c == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "perplexity: %.2f s per chunk\n", s);
    }
    std::fprintf(stderr, "[%lld]%.4f,", static_cast<long long>(c + 1), std::exp(nll / static_cast<double>(count)));
  }
  std::fprintf(stderr, "\n");
  const double mean = nll / static_cast<double>(count);
  const double ppl = std::exp(mean);
  double err = 0.0;
  if (count > 1) {
    const double var = nll2 / static_cast<double>(count) - mean * mean;
    err = ppl * std::sqrt(std::max(0.0, var) / static_cast<double>(count - 1));
  }
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, err);
  return 0;
}

const CommandRegistrar kPerplexity({"perplexity", "Perplexity of a text file (llama.cpp's method)",
                                    [](CLI::App& sub) -> std::function<int()> {
                                      auto opt = std::make_shared<PerplexityOptions>();
                                      sub.add_option("-m,--model", opt->model, "Model file or name")->required();
                                      sub.add_option("-f,--file", opt->file, "Text file")->required();
                                      sub.add_option("-c,--ctx-size", opt->n_ctx, "Tokens per chunk");
                                      sub.add_option("-b,--batch-size", opt->n_batch, "Tokens per forward pass");
                                      sub.add_option("-t,--threads", opt->n_threads, "Threads (0: all CPUs)");
                                      sub.add_option("--chunks", opt->max_chunks, "Score at most this many chunks");
                                      return [opt] { return run_perplexity(*opt); };
                                    }});

}  // namespace
}  // namespace ferrite::tools
