// Helpers shared by the tokenizer golden tests.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "support/test_data.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::test {

// Vocabularies of ../shared/vocab, by name ("llama-spm" ...).
inline const std::vector<std::string>& vocab_names() {
  static const std::vector<std::string> names = {"baichuan",  "bert-bge", "deepseek-coder", "deepseek-llm",
                                                 "falcon",    "gpt-2",    "gpt-neox",       "llama-bpe",
                                                 "llama-spm", "mpt",      "phi-3",          "qwen2",
                                                 "refact",    "starcoder"};
  return names;
}

// The vocabularies with a corpus golden in golden/tokenizer/ (shared/README.md;
// deepseek-llm and starcoder have none).
inline const std::vector<std::string>& corpus_vocab_names() {
  static const std::vector<std::string> names = {"baichuan", "bert-bge", "deepseek-coder", "falcon",
                                                 "gpt-2",    "gpt-neox", "llama-bpe",      "llama-spm",
                                                 "mpt",      "phi-3",    "qwen2",          "refact"};
  return names;
}

inline std::string vocab_rel(const std::string& name) { return "vocab/ggml-vocab-" + name + ".gguf"; }

// Loads each vocabulary once per test binary.
inline const tokenizer::Tokenizer& load_vocab(const std::filesystem::path& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<tokenizer::Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[path.string()];
  if (!slot) slot = std::make_unique<tokenizer::Tokenizer>(tokenizer::Tokenizer::from_file(path.string()));
  return *slot;
}

// Splits a .inp file into its test strings: they are separated (and the
// file ends) by "\n__ggml_vocab_test__\n".
inline std::vector<std::string> split_inp(const std::string& content) {
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t pos; (pos = content.find(kSep, start)) != std::string::npos; start = pos + kSep.size()) {
    out.push_back(content.substr(start, pos - start));
  }
  return out;
}

// Parses one line of space-separated ids.
inline std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  long long x;
  while (in >> x) ids.push_back(static_cast<int32_t>(x));
  return ids;
}

inline std::vector<std::string> split_lines(const std::string& content) {
  std::vector<std::string> lines;
  std::istringstream in(content);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace ferrite::test
