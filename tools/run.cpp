// `ferrite run MODEL -p PROMPT [-n N] [-c CTX] [--keep N] [--temp T --seed S ...] [--echo] [--stop STR]...`
// Generates text from a prompt (from -p, -f FILE, or stdin), streaming it to
// stdout as it is produced; llama-cli's options (cli_options.h). Load time
// and prompt/generation speed go to stderr. Stops after N tokens, at an
// end-of-generation token, at a --stop string, or on Ctrl-C; a full context
// shifts (the first --keep tokens stay, the oldest half of the rest goes)
// unless --no-context-shift. With -cnv, -i, -if or -sys it chats instead.
#include <unistd.h>

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

#include "cli_options.h"
#include "command.h"
#include "core/error.h"
#include "runtime/context.h"
#include "runtime/generation.h"
#include "runtime/sequence.h"
#include "runtime/speculative.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_prompt(const CliOptions& opt) {
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

void write_out(const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// An encoder-decoder (t5): the prompt is the encoder's input (llama.cpp's
// llama_encode) and the decoder generates from its start token, which
// replaces `tokens`. The encoder's token count (0: a decoder-only model,
// tokens unchanged) and its time.
struct EncodedPrompt {
  int64_t n_tokens = 0;
  double seconds = 0.0;
};

EncodedPrompt encode_prompt(runtime::Context& ctx, std::vector<int32_t>& tokens, const tokenizer::Tokenizer& tok,
                            const CliOptions& opt, bool drafting) {
  if (!ctx.has_encoder()) return {};
  if (drafting) throw InvalidArgument("speculative decoding is not supported for encoder-decoder models");
  if (!opt.prompt_cache.empty()) throw InvalidArgument("--prompt-cache is not supported for encoder-decoder models");
  const auto t0 = Clock::now();
  ctx.encode(tokens, 0);
  EncodedPrompt e{static_cast<int64_t>(tokens.size()), seconds_since(t0)};
  tokens = {ctx.decoder_start_token(tok.bos())};
  return e;
}

// The tokens a context shift keeps: --keep N prompt tokens after the BOS
// (-1 or more than the prompt: all of it), as llama-cli counts them.
int64_t tokens_to_keep(const CliOptions& opt, const std::vector<int32_t>& tokens, const tokenizer::Tokenizer& tok) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (opt.n_keep < 0 || opt.n_keep > n) return n;
  const bool bos = !tokens.empty() && tok.bos() >= 0 && tokens.front() == tok.bos();
  return std::min(n, opt.n_keep + (bos ? 1 : 0));
}

// --prompt-cache: the saved state when it comes from this model (the
// sequence then continues from it: prefill() keeps what it shares with the
// prompt).
void restore_prompt_cache(const CliOptions& opt, runtime::Context& ctx, runtime::Sequence& seq) {
  if (opt.prompt_cache.empty() || !std::filesystem::exists(opt.prompt_cache)) return;
  try {
    std::vector<int32_t> tokens = ctx.load_sequence(seq.seq(), opt.prompt_cache);
    if (static_cast<int64_t>(tokens.size()) != ctx.cache().max_pos(seq.seq()) + 1) {
      throw InvalidArgument("it holds no tokens for its cells");
    }
    std::fprintf(stderr, "prompt cache: %zu tokens restored from %s\n", tokens.size(), opt.prompt_cache.c_str());
    seq.assume(std::move(tokens));
  } catch (const Error& e) {
    seq.clear();
    std::fprintf(stderr, "prompt cache: %s not used (%s)\n", opt.prompt_cache.c_str(), e.what());
  }
}

void save_prompt_cache(const CliOptions& opt, runtime::Context& ctx, const runtime::Sequence& seq) {
  if (opt.prompt_cache.empty() || opt.prompt_cache_ro || seq.n_dropped() > 0) return;
  try {
    ctx.save_sequence(seq.seq(), opt.prompt_cache, seq.cached());
  } catch (const Error& e) {
    std::fprintf(stderr, "prompt cache: not written (%s)\n", e.what());
  }
}

int run_generate_impl(CliOptions& opt) {
  if (opt.n_predict < -2) throw InvalidArgument("-n must be -1 (no limit), -2 (until the context is full) or more");
  apply_escapes(opt);
  const std::string prompt = read_prompt(opt);
  runtime::GenerationParams gp = generation_params(opt);

  const auto t_load = Clock::now();
  LoadedModel lm = load_model(opt.model);
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(lm.model->file());
  runtime::Context ctx(lm.model, lm.context);
  LoadedDrafter draft = load_drafter(opt.spec, opt.model, ctx, tok);
  const double load_s = seconds_since(t_load);

  std::vector<int32_t> tokens = tok.encode(prompt, !opt.no_bos, /*parse_special=*/true);
  if (tokens.empty()) {
    if (tok.bos() < 0) throw InvalidArgument("empty prompt and the model has no BOS token");
    tokens.push_back(tok.bos());
  }
  const EncodedPrompt encoded = encode_prompt(ctx, tokens, tok, opt, draft.drafter != nullptr);
  const int64_t n_prompt = static_cast<int64_t>(tokens.size());
  bool shift = !opt.no_context_shift;
  if (opt.n_predict == -2) {
    gp.n_predict = std::max<int64_t>(0, ctx.n_ctx() - n_prompt);
    shift = false;
  }
  if (!shift && n_prompt + std::max<int64_t>(gp.n_predict, 0) > ctx.n_ctx()) {
    throw InvalidArgument("prompt (" + std::to_string(n_prompt) + " tokens) plus -n " + std::to_string(gp.n_predict) +
                          " exceeds the context size " + std::to_string(ctx.n_ctx()) +
                          " (raise -c, or drop --no-context-shift)");
  }
  runtime::Sequence seq(ctx, {.n_keep = tokens_to_keep(opt, tokens, tok),
                              .context_shift = shift,
                              .prefill_chunk = lm.context.n_batch});
  runtime::GenerationVocab vocab(tok);
  g_interrupted.store(false);
  gp.interrupt = &g_interrupted;
  runtime::Generation gen(vocab, gp,
                          {.n_ctx = static_cast<int32_t>(ctx.n_ctx()),
                           .n_ctx_train = static_cast<int32_t>(lm.model->hparams().n_ctx_train)},
                          tokens);
  restore_prompt_cache(opt, ctx, seq);

  const bool color = opt.color && ::isatty(STDOUT_FILENO);
  if (opt.echo) {
    // Exactly the prompt: the generated text continues it.
    if (color) write_out("\x1b[32m");
    write_out(prompt);
    if (color) write_out("\x1b[0m");
  }

  auto previous = std::signal(SIGINT, on_sigint);
  const auto t_prompt = Clock::now();
  runtime::PrefillStats ps;
  std::span<const float> logits = seq.prefill(tokens, &ps);
  const double prompt_s = seconds_since(t_prompt);
  if (!opt.prompt_cache_all) save_prompt_cache(opt, ctx, seq);

  const auto t_gen = Clock::now();
  std::unique_ptr<runtime::Speculation> spec;
  if (draft.drafter) spec = std::make_unique<runtime::Speculation>(*draft.drafter, draft.params);
  while (!gen.done()) {
    for (const runtime::GenerationStep& s : runtime::generation_steps(seq, gen, logits, spec.get())) write_out(s.text);
  }
  const double gen_s = seconds_since(t_gen);
  std::signal(SIGINT, previous);
  if (opt.prompt_cache_all) save_prompt_cache(opt, ctx, seq);

  const int64_t n_gen = gen.n_generated();
  std::fprintf(stderr, "\nload: %.2f s\n", load_s);
  if (encoded.n_tokens > 0) {
    std::fprintf(stderr, "prompt: %lld tokens encoded in %.3f s, %.2f tokens/s\n",
                 static_cast<long long>(encoded.n_tokens), encoded.seconds,
                 encoded.seconds > 0 ? static_cast<double>(encoded.n_tokens) / encoded.seconds : 0.0);
  } else {
    std::fprintf(stderr, "prompt: %lld tokens (%lld evaluated) in %.3f s, %.2f tokens/s\n",
                 static_cast<long long>(n_prompt), static_cast<long long>(ps.n_evaluated), prompt_s,
                 prompt_s > 0 ? static_cast<double>(ps.n_evaluated) / prompt_s : 0.0);
  }
  std::fprintf(stderr, "generation: %lld tokens in %.3f s, %.2f tokens/s%s", static_cast<long long>(n_gen), gen_s,
               gen_s > 0 ? static_cast<double>(n_gen) / gen_s : 0.0,
               gen.finish() == runtime::FinishReason::kInterrupted ? " (interrupted)" : "");
  if (seq.n_dropped() > 0) {
    std::fprintf(stderr, " (context shifted: %lld tokens dropped)", static_cast<long long>(seq.n_dropped()));
  }
  std::fprintf(stderr, "\n");
  if (spec) std::fprintf(stderr, "%s\n", speculative_summary(draft.drafter->name(), spec->stats()).c_str());
  return gen.finish() == runtime::FinishReason::kInterrupted ? 130 : 0;
}

const CommandRegistrar kRun({"run", "Generate text from a prompt (llama-cli's options)",
                             [](CLI::App& sub) -> std::function<int()> {
                               auto opt = std::make_shared<CliOptions>();
                               add_cli_options(sub, *opt, /*chat=*/false);
                               return [opt] {
                                 const bool chat = (opt->conversation || !opt->system_prompt.empty()) &&
                                                   !opt->no_conversation;
                                 return chat ? run_chat(*opt) : run_generate(*opt);
                               };
                             }});

}  // namespace

int run_generate(CliOptions& o) { return run_generate_impl(o); }

}  // namespace ferrite::tools
