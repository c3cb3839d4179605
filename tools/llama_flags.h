// llama.cpp's command line, as ferrite reads it. Every option of llama-cli,
// llama-server, llama-bench, llama-perplexity, llama-embedding and
// llama-batched-bench (build c392e50, plus -sys and --swa-full of later builds) is known
// here by its spelling. Before a command's options are parsed:
//   - a single-dash spelling of more than one letter (-ngl, -fa, -cnv, -sys,
//     -ctk, -hf, -np, ...), which CLI11 would read as a short option and a
//     value (-fa: "-f a"), becomes its long name (--n-gpu-layers, ...);
//   - a llama.cpp option the command does not declare is refused with
//     "not supported: FLAG" instead of being misread.
// Values of options are never rewritten.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ferrite::tools {

struct LlamaSpelling {
  const char* llama;    // "-ngl"
  const char* ferrite;  // "--n-gpu-layers": the long name a command declares
};

// The single-dash spellings of more than one letter and their long names.
std::span<const LlamaSpelling> llama_short_spellings();

// Whether `flag` ("--rope-scaling", "-C", "-ngl") is an option of a llama.cpp tool.
bool is_llama_flag(const std::string& flag);

// Rewrites `args` (what follows the command's name) for the command `sub`.
// Returns the usage error ("not supported: ...") or nullopt.
std::optional<std::string> rewrite_llama_flags(const CLI::App& sub, std::vector<std::string>& args);

}  // namespace ferrite::tools
