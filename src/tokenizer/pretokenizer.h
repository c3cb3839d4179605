// Byte-level BPE pre-tokenization: the text is cut into words by a list of
// regular expressions chosen by `tokenizer.ggml.pre`. Each expression is
// applied in turn to every word produced by the previous one; both the
// matches and the text between matches become words.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ferrite::tokenizer {

// Behaviour attached to a pre-tokenizer name.
struct PreTokenizerInfo {
  std::vector<std::string> regexes;
  bool clean_spaces = true;
  bool ignore_merges = false;
  bool add_bos = false;
};

// Looks up a pre-tokenizer by its `tokenizer.ggml.pre` name ("" and
// "default" give the default). Returns false for an unknown name.
bool find_pretokenizer(const std::string& name, PreTokenizerInfo& info);

// Every name find_pretokenizer accepts.
std::vector<std::string> pretokenizer_names();

// Half-open byte range of a word inside the text.
struct Span {
  uint32_t begin;
  uint32_t end;
};

class PreTokenizer {
 public:
  // Compiles the expressions (PCRE2 with UTF, JIT) after spelling their
  // Unicode property escapes out as Unicode 15 classes (regex_rewrite.h).
  // Throws ModelError when one does not compile.
  explicit PreTokenizer(const std::vector<std::string>& regexes);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits valid UTF-8 `text` into words; `out` is overwritten. Thread-safe.
  void split(std::string_view text, std::vector<Span>& out) const;

  // True when the JIT compiled every expression.
  bool jit_compiled() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferrite::tokenizer
