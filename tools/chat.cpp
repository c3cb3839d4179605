// `ferrite chat MODEL [-sys TEXT] [--chat-template NAME|FILE] [-n N] [-c CTX] [--keep N] [--temp T --seed S ...]`
// An interactive conversation: each turn is rendered with the model's chat
// template and only the tokens not already in the KV cache are evaluated.
// With a terminal, input goes through a line editor (history, multi-line);
// otherwise messages are read line by line from stdin, so chats can be
// scripted. Answers stream to stdout; speed goes to stderr. A conversation
// longer than the context goes on: the oldest half of it (after the first
// --keep tokens) is dropped (--no-context-shift: an error instead). The
// options are llama-cli's (cli_options.h); -p gives the first message.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "chat_input.h"
#include "cli_options.h"
#include "command.h"
#include "core/error.h"
#include "gguf/file.h"
#include "model/model.h"
#include "runtime/chat_session.h"
#include "runtime/context.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::tools {
namespace {

constexpr const char* kFallbackTemplate = "chatml";

constexpr const char* kCommandsHelp =
    "commands:\n"
    "  /reset        start over (keeps the system prompt)\n"
    "  /save FILE    write the conversation to FILE (JSON messages) and its KV cache to FILE.kv\n"
    "  /load FILE    replace the conversation with FILE's, restoring FILE.kv when it fits this model\n"
    "  /help         this list\n"
    "  /quit         leave (also Ctrl-D on an empty line, or Ctrl-C twice)\n"
    "a line ending in \\ continues on the next; \"\"\" on its own line opens and closes a block\n";

std::atomic<bool> g_interrupted{false};

extern "C" void on_chat_sigint(int) { g_interrupted.store(true); }

// SIGINT sets the flag and interrupts blocking reads (no SA_RESTART).
struct SigintGuard {
  SigintGuard() {
    struct sigaction sa{};
    sa.sa_handler = on_chat_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    ::sigaction(SIGINT, &sa, &previous);
  }
  ~SigintGuard() { ::sigaction(SIGINT, &previous, nullptr); }
  struct sigaction previous{};
};

// Status lines go to stderr, dimmed on a terminal.
void note(const std::string& text) {
  static const bool dim = ::isatty(STDERR_FILENO);
  std::fflush(stdout);
  std::fprintf(stderr, dim ? "\x1b[2m%s\x1b[0m\n" : "%s\n", text.c_str());
}

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

std::string template_source(const CliOptions& opt, const gguf::File& file) {
  if (!opt.chat_template.empty()) return chat::load_chat_template(opt.chat_template);
  const gguf::Value* t = file.find("tokenizer.chat_template");
  if (t != nullptr && t->is_string()) return t->as_string();
  note(std::string("the model has no chat template; using ") + kFallbackTemplate + " (choose one with --chat-template)");
  return chat::builtin_template(kFallbackTemplate);
}

void print_prefill(const runtime::PrefillStats& p) {
  note("[prefill: " + std::to_string(p.n_evaluated) + " tokens evaluated, " + std::to_string(p.n_reused) +
       " reused, " + std::to_string(p.n_prompt) + " in the prompt]");
}

// Runs a /command; returns false to leave the chat.
bool run_command(const std::string& line, runtime::ChatSession& session, const CliOptions& opt) {
  const size_t sp = line.find(' ');
  const std::string name = line.substr(0, sp);
  std::string arg = sp == std::string::npos ? "" : line.substr(sp + 1);
  while (!arg.empty() && arg.back() == ' ') arg.pop_back();
  while (!arg.empty() && arg.front() == ' ') arg.erase(0, 1);
  if (name == "/quit" || name == "/exit") return false;
  if (name == "/help") {
    std::fputs(kCommandsHelp, stderr);
  } else if (name == "/reset") {
    session.reset();
    note("[conversation reset]");
  } else if (name == "/save" || name == "/load") {
    if (arg.empty()) {
      note("usage: " + name + " FILE");
      return true;
    }
    try {
      if (name == "/save") {
        const bool with_kv = session.save(arg);
        note("[saved " + std::to_string(session.messages().size()) + " messages to " + arg +
             (with_kv ? "" : " (without the KV state: a GPU cache or a shifted context is not saved; /load evaluates again)") + "]");
      } else {
        const runtime::PrefillStats p = session.load(arg);
        if (opt.verbose) print_prefill(p);
        note("[loaded " + std::to_string(session.messages().size()) + " messages from " + arg + "; " + p.kv_note +
             "]");
      }
    } catch (const Error& e) {
      note(std::string("error: ") + e.what());
    }
  } else {
    note("unknown command " + name + " (/help lists them)");
  }
  return true;
}

int chat_impl(CliOptions& opt) {
  apply_escapes(opt);
  runtime::GenerationParams gen = generation_params(opt);
  LoadedModel lm = load_model(opt.model);
  const std::shared_ptr<const model::Model>& model = lm.model;
  const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_gguf(model->file());
  runtime::Context ctx(model, lm.context);
  runtime::ChatSession session(ctx, tok,
                               {.template_source = template_source(opt, model->file()),
                                .system_prompt = opt.system_prompt,
                                .prefill_chunk = lm.context.n_batch,
                                .n_keep = std::max<int64_t>(opt.n_keep, 0),
                                .context_shift = !opt.no_context_shift});
  LoadedDrafter draft = load_drafter(opt.spec, opt.model, ctx, tok);
  if (draft.drafter) session.set_speculation(draft.drafter.get(), draft.params);
  const std::string& path = lm.path;

  ChatInput input(g_interrupted);
  if (input.interactive()) {
    note("ferrite chat: " + path + ", context " + std::to_string(ctx.n_ctx()) +
         " tokens. /help for commands, Ctrl-D to quit.");
  }
  SigintGuard sigint;
  gen.interrupt = &g_interrupted;
  bool first = opt.prompt_set;  // -p: the first message
  bool after_interrupt = false;  // a Ctrl-C at the prompt right after one leaves
  for (;;) {
    g_interrupted.store(false);
    std::string msg;
    const ChatInput::Result r = first ? ChatInput::Result::kMessage : input.read_message(msg);
    if (first) {
      msg = opt.prompt;
      first = false;
    }
    if (r == ChatInput::Result::kEof) break;
    if (r == ChatInput::Result::kInterrupt) {
      if (after_interrupt) break;
      after_interrupt = true;
      note("(Ctrl-C again or Ctrl-D to quit)");
      continue;
    }
    after_interrupt = false;
    if (msg.find_first_not_of(" \t\n\r") == std::string::npos) continue;
    if (msg.front() == '/') {
      if (!run_command(msg, session, opt)) break;
      continue;
    }

    runtime::ChatAnswer ans;
    const int64_t dropped_before = session.sequence().n_dropped();
    try {
      ans = session.respond(msg, gen, [](std::string_view s) {
        std::fwrite(s.data(), 1, s.size(), stdout);
        std::fflush(stdout);
      });
    } catch (const InvalidArgument& e) {
      note(std::string("error: ") + e.what() + " (/reset to start over, or restart with a larger -c)");
      continue;
    }
    if (ans.text.empty() || ans.text.back() != '\n') std::fputs("\n", stdout);
    if (opt.verbose) print_prefill(ans.prefill);
    if (opt.verbose && draft.drafter) note(speculative_summary(draft.drafter->name(), ans.speculative));
    const double prompt_tps = ans.prefill.seconds > 0 ? ans.prefill.n_evaluated / ans.prefill.seconds : 0.0;
    const double gen_tps = ans.seconds > 0 ? ans.n_tokens / ans.seconds : 0.0;
    std::string stats = fmt("[%.0f tokens, %.2f tokens/s; prompt %.0f new tokens, %.2f tokens/s]",
                            static_cast<double>(ans.n_tokens), gen_tps,
                            static_cast<double>(ans.prefill.n_evaluated), prompt_tps);
    if (ans.stop == runtime::FinishReason::kInterrupted) {
      stats += " [interrupted]";
      after_interrupt = true;
    } else if (ans.stop == runtime::FinishReason::kContextFull) {
      stats += " [context full: /reset to start over, or restart with a larger -c]";
    }
    if (session.sequence().n_dropped() > dropped_before) {
      stats += " [context shifted: the oldest " + std::to_string(session.sequence().n_dropped() - dropped_before) +
               " tokens dropped]";
    }
    note(stats);
  }
  return 0;
}

const CommandRegistrar kChat({"chat", "Chat with a model interactively (llama-cli's options)",
                              [](CLI::App& sub) -> std::function<int()> {
                                auto opt = std::make_shared<CliOptions>();
                                sub.footer(std::string(kCommandsHelp) +
                                           "/load restores the saved KV state (no re-evaluation) when FILE.kv exists "
                                           "and comes from the same model;\notherwise the conversation is evaluated "
                                           "again. Each turn evaluates only the tokens the KV cache lacks.");
                                add_cli_options(sub, *opt, /*chat=*/true);
                                return [opt] { return run_chat(*opt); };
                              }});

}  // namespace

int run_chat(CliOptions& o) { return chat_impl(o); }

}  // namespace ferrite::tools
