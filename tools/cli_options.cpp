#include "cli_options.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "sampling_options.h"

namespace ferrite::tools {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The GBNF of --grammar / --grammar-file / --json-schema (at most one), or "".
std::string grammar_text(const CliOptions& opt) {
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

}  // namespace

void add_cli_options(CLI::App& sub, CliOptions& o, bool chat) {
  if (chat) o.n_predict = -1;
  add_model_options(sub, o.model);
  sub.add_option("-p,--prompt", o.prompt, chat ? "First message" : "Prompt text (else -f FILE, else stdin)")
      ->each([&o](const std::string&) { o.prompt_set = true; });
  sub.add_option("-f,--file", o.file, "Read the prompt from a file");
  sub.add_option("-n,--n-predict,--predict", o.n_predict,
                 chat ? "Tokens per answer at most (-1: until the end of the turn)"
                      : "Tokens to generate (-1: until an end-of-generation token, -2: until the context is full)");
  sub.add_option("--keep", o.n_keep, "Prompt tokens a context shift keeps, after the BOS (-1: the whole prompt)");
  sub.add_flag("--no-context-shift", o.no_context_shift,
               "Stop when the context is full instead of dropping the oldest half of it");
  sub.add_flag("--ignore-eos", o.ignore_eos, "Do not stop at end-of-generation tokens");
  sub.add_option("--stop", o.stops, "Stop when this text is generated (repeatable)");
  sub.add_option("-r,--reverse-prompt", o.stops, "Stop at this text, as --stop (repeatable)");
  sub.add_option("--grammar", o.grammar, "Constrain the output to this GBNF grammar");
  sub.add_option("--grammar-file", o.grammar_file, "Read the GBNF grammar from a file");
  sub.add_option("-j,--json-schema", o.json_schema, "Constrain the output to JSON valid under this schema");
  sub.add_flag("-e,--escape,!--no-escape", o.escape,
               "Process escapes (\\n \\r \\t \\' \\\" \\\\ \\xHH) in the prompt, system prompt and stops (also -e; "
               "on by default)");
  sub.add_flag("--color", o.color, "Color the prompt and status lines on a terminal (also -co)");
  sub.add_option("--system-prompt", o.system_prompt, "System prompt (also -sys; run: holds a conversation)");
  sub.add_option("--chat-template", o.chat_template,
                 "Built-in template name or Jinja file (default: the model's, else chatml)");
  sub.add_option("--chat-template-file", o.chat_template, "Jinja file of the chat template");
  sub.add_flag("--jinja")->description("Accepted for llama.cpp's option: chat templates always run as Jinja");
  sub.add_flag("--verbose", o.verbose, "Print how many prompt tokens each turn evaluates");
  sub.add_flag("-i,--conversation,--interactive,--interactive-first", o.conversation,
               chat ? "Accepted for llama-cli's -cnv, -i, -if: chat always holds a conversation"
                    : "Hold a conversation as `ferrite chat` does (also -cnv, -if)");
  if (!chat) {
    sub.add_flag("--echo", o.echo, "Print the prompt too");
    sub.add_flag("--no-bos", o.no_bos, "Do not add the BOS token");
    sub.add_flag("--no-conversation", o.no_conversation, "Generate from the prompt (the default; also -no-cnv)");
    sub.add_option("--prompt-cache", o.prompt_cache,
                   "File of the prompt's KV state: restored when it holds a prefix of the prompt, else written");
    sub.add_flag("--prompt-cache-all", o.prompt_cache_all, "With --prompt-cache: save the generated tokens too");
    sub.add_flag("--prompt-cache-ro", o.prompt_cache_ro, "With --prompt-cache: read it, never write it");
  }
  add_sampling_options(sub, o.sampling);
  add_speculative_options(sub, o.spec);
}

std::string process_escapes(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case 'x':
        if (i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
          out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
          i += 2;
          break;
        }
        out += "\\x";
        break;
      default:
        out += '\\';
        out += c;
        break;
    }
  }
  return out;
}

void apply_escapes(CliOptions& o) {
  if (!o.escape) return;
  o.prompt = process_escapes(o.prompt);
  o.system_prompt = process_escapes(o.system_prompt);
  for (std::string& s : o.stops) s = process_escapes(s);
}

runtime::GenerationParams generation_params(const CliOptions& o) {
  runtime::GenerationParams p;
  p.sampling = o.sampling;
  p.n_predict = o.n_predict < 0 ? -1 : o.n_predict;
  p.stop = o.stops;
  p.grammar = grammar_text(o);
  p.ignore_eos = o.ignore_eos;
  return p;
}

}  // namespace ferrite::tools
