// `ferrite tokenize -m MODEL [-p TEXT | -f FILE] [--ids] [--no-bos] [--special]`:
// the tokens of a text, one `id -> 'piece'` per line, or with --ids the list
// of ids as `[1, 2, 3]`.
// `ferrite detokenize -m MODEL IDS...`: the text of token ids (ids may be
// separated by spaces or commas, brackets allowed).
#include <climits>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "text_scoring.h"
#include "core/error.h"
#include "model_path.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ferrite::tools {
namespace {

struct TokenizeOptions {
  std::string model;
  std::string prompt;
  std::string file;
  bool ids = false;
  bool no_bos = false;
  bool special = false;
};

// Piece with control characters and quotes escaped, for one-line display.
std::string printable(std::string_view s) {
  std::string out;
  const bool valid = tokenizer::is_valid_utf8(s);  // else bytes >= 0x80 are escaped too
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\\' || c == '\'') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c < 0x20 || c == 0x7F || (!valid && c >= 0x80)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

int run_tokenize(const TokenizeOptions& opt) {
  if (!opt.prompt.empty() && !opt.file.empty()) throw InvalidArgument("give either -p or -f, not both");
  const std::string text = opt.file.empty() ? opt.prompt : read_text_file(opt.file);
  const auto tok = tokenizer::Tokenizer::from_file(resolve_model_argument(opt.model));
  const auto ids = tok.encode(text, !opt.no_bos, opt.special);
  if (opt.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ", ";
      line += std::to_string(ids[i]);
    }
    line += "]\n";
    std::fwrite(line.data(), 1, line.size(), stdout);
    return 0;
  }
  for (int32_t id : ids) {
    const std::string p = printable(tok.piece_view(id, true));
    std::printf("%6d -> '%s'\n", id, p.c_str());
  }
  return 0;
}

struct DetokenizeOptions {
  std::string model;
  std::vector<std::string> ids;
  bool special = false;
};

std::vector<int32_t> parse_id_list(const std::vector<std::string>& args) {
  std::vector<int32_t> ids;
  for (const std::string& a : args) {
    std::string cur;
    auto flush = [&] {
      if (cur.empty()) return;
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(cur, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != cur.size() || v < 0 || v > INT32_MAX) throw InvalidArgument("not a token id: '" + cur + "'");
      ids.push_back(static_cast<int32_t>(v));
      cur.clear();
    };
    for (char c : a) {
      if (c == ',' || c == ' ' || c == '[' || c == ']' || c == '\t' || c == '\n') {
        flush();
      } else {
        cur.push_back(c);
      }
    }
    flush();
  }
  return ids;
}

int run_detokenize(const DetokenizeOptions& opt) {
  const std::vector<int32_t> ids = parse_id_list(opt.ids);
  const auto tok = tokenizer::Tokenizer::from_file(resolve_model_argument(opt.model));
  const std::string text = tok.decode(ids, opt.special);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

const CommandRegistrar kTokenize({"tokenize", "Print the tokens of a text",
                                  [](CLI::App& sub) -> std::function<int()> {
                                    auto opt = std::make_shared<TokenizeOptions>();
                                    sub.add_option("-m,--model,model", opt->model, "Model file or name (also as the first argument)")->required();
                                    sub.add_option("-p,--prompt", opt->prompt, "Text to tokenize");
                                    sub.add_option("-f,--file", opt->file, "File whose contents to tokenize");
                                    sub.add_flag("--ids", opt->ids, "Print only the ids, as [a, b, ...]");
                                    sub.add_flag("--no-bos", opt->no_bos, "Do not add BOS/EOS");
                                    sub.add_flag("--special", opt->special, "Parse special tokens in the text");
                                    return [opt] { return run_tokenize(*opt); };
                                  }});

const CommandRegistrar kDetokenize({"detokenize", "Print the text of token ids",
                                    [](CLI::App& sub) -> std::function<int()> {
                                      auto opt = std::make_shared<DetokenizeOptions>();
                                      sub.add_option("-m,--model,model", opt->model, "Model file or name (also as the first argument)")->required();
                                      sub.add_option("ids", opt->ids, "Token ids")->required();
                                      sub.add_flag("--special", opt->special, "Render control tokens");
                                      return [opt] { return run_detokenize(*opt); };
                                    }});

}  // namespace
}  // namespace ferrite::tools
