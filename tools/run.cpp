// `ferrite run -m MODEL -p PROMPT [-n N] [-c CTX] [-b BATCH] [-t THREADS]
//  [--temp T --seed S ...] [--echo] [--stop STR]... [-f FILE]`
// Generates text from a prompt (from -p, -f FILE, or stdin), streaming it to
// stdout as it is produced. Load time and prompt/generation speed go to
// stderr. Stops after N tokens, at an end-of-generation token, at a --stop
// string, or on Ctrl-C.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "core/error.h"
#include "gpu_layers.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "load_bar.h"
#include "model/model.h"
#include "model_path.h"
#include "runtime/context.h"
#include "runtime/offload.h"
#include "sampling/sampler.h"
#include "sampling_options.h"
#include "server/grammar_constraint.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  bool prompt_set = false;
  std::string file;
  int n_predict = 128;
  int64_t n_ctx = 0;
  int64_t n_batch = 512;
  int n_threads = 0;
  std::string n_gpu_layers = "0";  // -ngl: layers on the GPU, a number or "all"
  bool fit = false;                // --fit: the largest -ngl that fits in the GPU's free memory
  bool echo = false;
  bool no_bos = false;
  std::vector<std::string> stops;
  std::string cache_type_k = "f16";
  std::string cache_type_v = "f16";
  std::string grammar;       // GBNF text
  std::string grammar_file;  // GBNF file
  std::string json_schema;   // JSON schema text
  sampling::SamplerParams sampling;
};

TensorType cache_type(const std::string& name, const char* option) {
  return runtime::cache_type_from_name(name, option);
}

// The GBNF of --grammar / --grammar-file / --json-schema (at most one), or "".
std::string grammar_text(const RunOptions& opt) {
  const int given = !opt.grammar.empty() + !opt.grammar_file.empty() + !opt.json_schema.empty();
  if (given > 1) throw InvalidArgument("give only one of --grammar, --grammar-file and --json-schema");
  if (!opt.grammar_file.empty()) {
    // Refuse oversized files before reading them into memory.
    std::error_code ec;
    const auto size = std::filesystem::file_size(opt.grammar_file, ec);
    if (ec) throw IoError(opt.grammar_file, "cannot read the grammar file: " + ec.message());
    if (size > grammar::Limits{}.max_text_bytes) {
      throw InvalidArgument(opt.grammar_file + ": grammar file of " + std::to_string(size) + " bytes exceeds the " +
                            std::to_string(grammar::Limits{}.max_text_bytes) + "-byte limit");
    }
    std::ifstream in(opt.grammar_file, std::ios::binary);
    if (!in) throw IoError(opt.grammar_file, "cannot read the grammar file");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (!opt.json_schema.empty()) return grammar::json_schema_to_gbnf(std::string_view(opt.json_schema));
  return opt.grammar;
}

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_prompt(const RunOptions& opt) {
  if (!opt.file.empty()) {
    std::ifstream in(opt.file, std::ios::binary);
    if (!in) throw IoError(opt.file, "cannot open");
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  if (opt.prompt_set) return opt.prompt;
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// Streams text to stdout while holding back any tail that could begin a stop
// string; reports when a stop string has appeared (printing up to it).
class StopFilter {
 public:
  explicit StopFilter(const std::vector<std::string>& stops) : stops_(stops) {}

  // Returns true when generation must stop.
  bool push(const std::string& text) {
    pending_ += text;
    for (const std::string& s : stops_) {
      if (s.empty()) continue;
      const size_t at = pending_.find(s);
      if (at != std::string::npos) {
        emit(pending_.substr(0, at));
        pending_.clear();
        return true;
      }
    }
    size_t keep = 0;  // longest suffix of pending_ that is a proper prefix of a stop string
    for (const std::string& s : stops_) {
      for (size_t len = std::min(s.size() - (s.empty() ? 0 : 1), pending_.size()); len > keep; --len) {
        if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
          keep = len;
          break;
        }
      }
    }
    emit(pending_.substr(0, pending_.size() - keep));
    pending_.erase(0, pending_.size() - keep);
    return false;
  }
  void finish() {
    emit(pending_);
    pending_.clear();
  }

 private:
  static void emit(const std::string& s) {
    if (s.empty()) return;
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
  }
  const std::vector<std::string>& stops_;
  std::string pending_;
};

int run_generate(RunOptions& opt) {
  if (opt.n_predict < 0) throw InvalidArgument("-n must not be negative");
  const std::string prompt = read_prompt(opt);

  const auto t_load = Clock::now();
  const std::string path = resolve_model_argument(opt.model);
  std::shared_ptr<const model::Model> model = load_model_with_bar(path);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  const TensorType type_k = cache_type(opt.cache_type_k, "--cache-type-k");
  const TensorType type_v = cache_type(opt.cache_type_v, "--cache-type-v");
  const int ngl = gpu_layers_from_options(opt.n_gpu_layers, opt.fit, *model, opt.n_ctx, type_k, type_v);
  runtime::Context ctx(model, {.n_ctx = opt.n_ctx,
                               .n_batch = opt.n_batch,
                               .n_threads = opt.n_threads,
                               .cache_type = type_k,
                               .cache_type_v = type_v,
                               .n_gpu_layers = ngl});
  const double load_s = seconds_since(t_load);

  std::vector<int32_t> tokens = tok.encode(prompt, !opt.no_bos, /*parse_special=*/true);
  if (tokens.empty()) {
    if (tok.bos() < 0) throw InvalidArgument("empty prompt and the model has no BOS token");
    tokens.push_back(tok.bos());
  }
  if (static_cast<int64_t>(tokens.size()) + opt.n_predict > ctx.n_ctx()) {
    throw InvalidArgument("prompt (" + std::to_string(tokens.size()) + " tokens) plus -n " +
                          std::to_string(opt.n_predict) + " exceeds the context size " + std::to_string(ctx.n_ctx()) +
                          " (raise -c)");
  }
  sampling::Sampler sampler(opt.sampling, sampling_model_info(tok, static_cast<int32_t>(ctx.n_ctx()),
                                                               static_cast<int32_t>(model->hparams().n_ctx_train)));
  std::shared_ptr<server::GrammarConstraint> constraint;
  if (const std::string gbnf = grammar_text(opt); !gbnf.empty()) {
    constraint = std::make_shared<server::GrammarConstraint>(gbnf, server::build_vocab_pieces(tok));
    sampler.set_constraint(constraint);
  }
  for (int32_t t : tokens) sampler.accept(t, /*advance_constraint=*/false);

  if (opt.echo) {
    const std::string text = tok.decode(tokens);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }

  g_interrupted.store(false);
  auto previous = std::signal(SIGINT, on_sigint);

  const auto t_prompt = Clock::now();
  std::span<const float> logits = ctx.eval(tokens);
  const double prompt_s = seconds_since(t_prompt);

  tokenizer::StreamDecoder decoder(tok);
  StopFilter filter(opt.stops);
  int n_generated = 0;
  const auto t_gen = Clock::now();
  while (n_generated < opt.n_predict && !g_interrupted.load()) {
    const int32_t next = sampler.sample(logits);
    if (tok.is_eog(next)) break;
    ++n_generated;
    if (filter.push(decoder.push(next))) break;
    if (n_generated == opt.n_predict) break;
    if (constraint && constraint->finished()) break;  // the grammar admits nothing more
    const int32_t one[1] = {next};
    logits = ctx.eval(one);
  }
  filter.push(decoder.flush());
  filter.finish();
  const double gen_s = seconds_since(t_gen);
  std::signal(SIGINT, previous);

  std::fprintf(stderr, "\nload: %.2f s\n", load_s);
  std::fprintf(stderr, "prompt: %zu tokens in %.3f s, %.2f tokens/s\n", tokens.size(), prompt_s,
               prompt_s > 0 ? static_cast<double>(tokens.size()) / prompt_s : 0.0);
  std::fprintf(stderr, "generation: %d tokens in %.3f s, %.2f tokens/s%s\n", n_generated, gen_s,
               gen_s > 0 ? n_generated / gen_s : 0.0, g_interrupted.load() ? " (interrupted)" : "");
  return g_interrupted.load() ? 130 : 0;
}

// llama.cpp spells it -ngl, which CLI11 cannot declare.
const OptionAliasRegistrar kNglAlias({"run", "-ngl", "--ngl"});
const OptionAliasRegistrar kCtkAlias({"run", "-ctk", "--cache-type-k"});
const OptionAliasRegistrar kCtvAlias({"run", "-ctv", "--cache-type-v"});

const CommandRegistrar kRun({"run", "Generate text from a prompt",
                             [](CLI::App& sub) -> std::function<int()> {
                               auto opt = std::make_shared<RunOptions>();
                               sub.add_option("-m,--model,model", opt->model, "Model file or name (also as the first argument)")->required();
                               sub.add_option("-p,--prompt", opt->prompt, "Prompt text")
                                   ->each([opt](const std::string&) { opt->prompt_set = true; });
                               sub.add_option("-f,--file", opt->file, "Read the prompt from a file");
                               sub.add_option("-n,--n-predict", opt->n_predict, "Tokens to generate");
                               sub.add_option("-c,--ctx-size", opt->n_ctx, "Context size (0: the model's, up to 4096)");
                               sub.add_option("-b,--batch-size", opt->n_batch, "Prompt tokens per forward pass");
                               sub.add_option("-t,--threads", opt->n_threads, "Threads (0: all CPUs)");
                               sub.add_option("--ngl,--n-gpu-layers", opt->n_gpu_layers,
                                              "Layers on the GPU: a number or all (needs a CUDA build)");
                               sub.add_flag("--fit", opt->fit,
                                            "Offload the most layers that fit in the GPU's free memory (prints the numbers)");
                               sub.add_flag("--echo", opt->echo, "Print the prompt too");
                               sub.add_flag("--no-bos", opt->no_bos, "Do not add the BOS token");
                               sub.add_option("--stop", opt->stops, "Stop when this text is generated (repeatable)");
                               sub.add_option("--cache-type-k", opt->cache_type_k, std::string("K cache type: ") + runtime::kCacheTypeNames);
                               sub.add_option("--cache-type-v", opt->cache_type_v, std::string("V cache type: ") + runtime::kCacheTypeNames);
                               sub.add_option("--grammar", opt->grammar, "Constrain the output to this GBNF grammar");
                               sub.add_option("--grammar-file", opt->grammar_file, "Read the GBNF grammar from a file");
                               sub.add_option("-j,--json-schema", opt->json_schema,
                                              "Constrain the output to JSON valid under this schema");
                               add_sampling_options(sub, opt->sampling);
                               return [opt] { return run_generate(*opt); };
                             }});

}  // namespace
}  // namespace ferrite::tools
