// Pre-tokenizer expressions: every named one compiles, and splits follow the
// definitions of the expressions.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/pretokenizer.h"

namespace ferrite::tokenizer {
namespace {

std::vector<std::string> words(const std::string& pre, const std::string& text) {
  PreTokenizerInfo info;
  EXPECT_TRUE(find_pretokenizer(pre, info)) << pre;
  PreTokenizer p(info.regexes);
  std::vector<Span> spans;
  p.split(text, spans);
  std::vector<std::string> out;
  for (const Span& s : spans) out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

TEST(PreTokenizer, EveryNameCompilesAndSplits) {
  const auto names = pretokenizer_names();
  EXPECT_GT(names.size(), 40u);
  for (const auto& n : names) {
    const auto w = words(n, "Hello world's 12345 \xC3\xA9t\xC3\xA9\n\n  x");
    std::string joined;
    for (const auto& s : w) joined += s;
    EXPECT_EQ(joined, "Hello world's 12345 \xC3\xA9t\xC3\xA9\n\n  x") << n;  // words tile the text
  }
  PreTokenizerInfo info;
  EXPECT_FALSE(find_pretokenizer("no-such-pre", info));
}

TEST(PreTokenizer, Gpt2Definition) {
  // 's | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S)
  EXPECT_EQ(words("gpt-2", "Hello world's 123  !!"),
            (std::vector<std::string>{"Hello", " world", "'s", " 123", " ", " !!"}));
}

TEST(PreTokenizer, Llama3Definition) {
  // Digits in groups of at most three; one non-letter may lead a word, but
  // " _" is two, so they go to the punctuation alternative.
  EXPECT_EQ(words("llama-bpe", "1234567 _abc\n\nx_y"),
            (std::vector<std::string>{"123", "456", "7", " _", "abc", "\n\n", "x", "_y"}));
}

TEST(PreTokenizer, SuperbpeEmptyMatchesSplitThousands) {
  EXPECT_EQ(words("superbpe", "1234567"), (std::vector<std::string>{"1", "234", "567"}));
}

TEST(PreTokenizer, NextLineIsWhitespace) {
  // U+0085 has the White_Space property: "\s+(?!\S)" takes it with the space.
  EXPECT_EQ(words("gpt-2", "a\xC2\x85 b"), (std::vector<std::string>{"a", "\xC2\x85", " b"}));
}

}  // namespace
}  // namespace ferrite::tokenizer
