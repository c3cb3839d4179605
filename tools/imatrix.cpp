// `ferrite imatrix -m MODEL -f TEXT -o FILE [--chunks N] [-c N]
// [--process-output] [--output-format gguf|dat]`: the importance matrix of a
// model over a text, as llama.cpp's llama-imatrix computes it. The text is
// tokenized (with BOS) and cut into chunks of N tokens (-c, default 512);
// each chunk is evaluated from an empty cache with its first token replaced
// by BOS, in one forward pass. Every product of a weight named "blk.*" (and
// "output.weight" with --process-output) adds the squares of its input rows
// per column: plain matrices when the pass has at least 16 rows, expert
// matrices always (llama.cpp's rules). The file is llama.cpp's GGUF imatrix,
// or its legacy format for a name ending in ".dat" (or --output-format dat).
// Like llama-imatrix it prints the perplexity of the second half of each chunk.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "load_bar.h"
#include "backend/matmul_observer.h"
#include "model/model.h"
#include "model_path.h"
#include "quant/imatrix_collector.h"
#include "runtime/context.h"
#include "text_scoring.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

// llama.cpp collects plain products of at least this many rows.
constexpr int64_t kMinRows = 16;

struct ImatrixOptions {
  std::string model, file, out, format;
  int64_t n_ctx = 512;
  int64_t chunks = -1;
  int n_threads = 0;
  bool process_output = false;
};

// Forwards the products llama.cpp collects to the collector.
class Collect : public backend::MatmulObserver {
 public:
  Collect(quant::ImatrixCollector& c, bool process_output) : c_(c), process_output_(process_output) {}
  void on_matmul(const gguf::TensorInfo& w, int64_t expert, const float* x, int64_t n, int64_t cols) override {
    const bool wanted = w.name.rfind("blk.", 0) == 0 || (process_output_ && w.name == "output.weight");
    if (!wanted) return;
    if (expert < 0) {
      if (n < kMinRows) return;
      c_.add(w.name, 1, 0, x, n, cols);
    } else {
      c_.add(w.name, w.ne[2], expert, x, n, cols);
    }
  }

 private:
  quant::ImatrixCollector& c_;
  bool process_output_;
};

int run_imatrix(const ImatrixOptions& opt) {
  if (opt.n_ctx < kMinRows) throw InvalidArgument("-c must be at least " + std::to_string(kMinRows));
  std::string format = opt.format;
  if (format.empty()) format = opt.out.size() >= 4 && opt.out.ends_with(".dat") ? "dat" : "gguf";
  if (format != "gguf" && format != "dat") throw InvalidArgument("--output-format must be gguf or dat");

  const std::string path = resolve_model_argument(opt.model);
  std::shared_ptr<const model::Model> model = load_model_with_bar(path);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  const std::vector<int32_t> tokens = tok.encode(read_text_file(opt.file), /*add_special=*/true, false);
  const int64_t n_ctx = opt.n_ctx;
  if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx) {
    throw InvalidArgument("the text has " + std::to_string(tokens.size()) + " tokens; at least 2 x -c = " +
                          std::to_string(2 * n_ctx) + " are needed (as llama-imatrix)");
  }
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (opt.chunks >= 0) n_chunks = std::min(n_chunks, opt.chunks);
  if (n_chunks == 0) throw InvalidArgument("--chunks 0: nothing to compute");

  runtime::Context ctx(model, {.n_ctx = n_ctx, .n_batch = n_ctx, .n_threads = opt.n_threads});
  quant::ImatrixCollector collector;
  Collect observer(collector, opt.process_output);
  ctx.set_matmul_observer(&observer);
  std::fprintf(stderr, "imatrix: %zu tokens, %lld chunks of %lld\n", tokens.size(), static_cast<long long>(n_chunks),
               static_cast<long long>(n_ctx));

  const bool add_bos = tok.add_bos() && tok.bos() >= 0;
  const int64_t first = n_ctx / 2;
  double nll = 0.0;
  int64_t count = 0;
  std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t c = 0; c < n_chunks; ++c) {
    std::copy_n(tokens.begin() + c * n_ctx, n_ctx, chunk.begin());
    if (add_bos) chunk[0] = tok.bos();
    ctx.clear();
    ctx.eval(chunk, 0, /*all_logits=*/true);
    collector.end_pass();
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      nll += negative_log_prob(ctx.logits(j), tokens[static_cast<size_t>(c * n_ctx + j + 1)]);
      ++count;
    }
    if (c == 0) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "imatrix: %.2f s per chunk\n", s);
    }
    std::fprintf(stderr, "[%lld]%.4f,", static_cast<long long>(c + 1), std::exp(nll / static_cast<double>(count)));
  }
  std::fprintf(stderr, "\nFinal estimate: PPL = %.4f\n", std::exp(nll / static_cast<double>(count)));
  ctx.set_matmul_observer(nullptr);

  const std::string dataset = std::filesystem::path(opt.file).filename().string();
  if (format == "dat") {
    std::vector<std::string> skipped;
    const quant::Imatrix m = collector.to_legacy(static_cast<int32_t>(n_chunks), dataset, &skipped);
    for (const std::string& s : skipped) {
      std::fprintf(stderr, "imatrix: %s saw no input for some expert: left out of the legacy file\n", s.c_str());
    }
    m.write(opt.out);
    std::fprintf(stderr, "imatrix: %zu entries -> %s (legacy .dat)\n", m.entries().size(), opt.out.c_str());
  } else {
    collector.write_gguf(opt.out, {dataset}, static_cast<uint32_t>(n_chunks), static_cast<uint32_t>(n_ctx));
    std::fprintf(stderr, "imatrix: %zu entries -> %s (GGUF)\n", collector.size(), opt.out.c_str());
  }
  return 0;
}

const CommandRegistrar kImatrix(
    {"imatrix", "Compute an importance matrix over a text (for quantize --imatrix), as llama-imatrix does",
     [](CLI::App& sub) -> std::function<int()> {
       auto opt = std::make_shared<ImatrixOptions>();
       sub.add_option("-m,--model", opt->model, "Model (GGUF path or name)")->required();
       sub.add_option("-f,--file", opt->file, "Text file")->required();
       sub.add_option("-o,--output", opt->out, "Output file (GGUF; legacy format when the name ends in .dat)")
           ->required();
       sub.add_option("--chunks", opt->chunks, "Use at most N chunks (default: the whole text)");
       sub.add_option("-c,--ctx-size", opt->n_ctx, "Tokens per chunk (default 512)");
       sub.add_option("--output-format", opt->format, "gguf or dat (default: from the output name)");
       sub.add_flag("--process-output", opt->process_output, "Also collect output.weight");
       sub.add_option("-t,--threads", opt->n_threads, "Threads (default: all cores)");
       return [opt] { return run_imatrix(*opt); };
     }});

}  // namespace
}  // namespace ferrite::tools
