// Pre-tokenizer expressions: every named one compiles, and splits follow the
// definitions of the expressions.
#include <string>
#include <vector>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include "core/error.h"
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

TEST(PreTokenizer, EveryNameCompilesWithTheJit) {
  uint32_t jit = 0;
  pcre2_config(PCRE2_CONFIG_JIT, &jit);
  if (!jit) GTEST_SKIP() << "PCRE2 built without JIT";
  for (const auto& n : pretokenizer_names()) {
    PreTokenizerInfo info;
    ASSERT_TRUE(find_pretokenizer(n, info));
    EXPECT_TRUE(PreTokenizer(info.regexes).jit_compiled()) << n;
  }
}

// Letters and digits first assigned in Unicode 15.0 split as letters and
// digits. U+1E030/1E031 CYRILLIC MODIFIER LETTER SMALL A/BE (Lm),
// U+11F04/11F05 KAWI LETTER A/AA (Lo), U+31350/31351 CJK Extension H (Lo),
// U+1E4D0/1E4D1 NAG MUNDARI LETTER O/OP (Lo), U+1E4F1..1E4F4 NAG MUNDARI
// DIGIT ONE..FOUR (Nd). With Unicode 14 tables they were unassigned (Cn):
// punctuation-like for these expressions.
const std::string kCyrMod = "\xF0\x9E\x80\xB0\xF0\x9E\x80\xB1";      // U+1E030 U+1E031
const std::string kKawi = "\xF0\x91\xBC\x84\xF0\x91\xBC\x85";        // U+11F04 U+11F05
const std::string kExtH = "\xF0\xB1\x8D\x90\xF0\xB1\x8D\x91";        // U+31350 U+31351
const std::string kNagLetters = "\xF0\x9E\x93\x90\xF0\x9E\x93\x91";  // U+1E4D0 U+1E4D1
const std::string kNagDigit[4] = {"\xF0\x9E\x93\xB1", "\xF0\x9E\x93\xB2", "\xF0\x9E\x93\xB3",
                                  "\xF0\x9E\x93\xB4"};  // U+1E4F1..U+1E4F4
const std::string kNagDigits = kNagDigit[0] + kNagDigit[1] + kNagDigit[2] + kNagDigit[3];

TEST(PreTokenizer, Unicode15LettersGpt2) {
  // ' ?\p{L}+' takes the letters; '!' is left to ' ?[^\s\p{L}\p{N}]+';
  // ' ?\p{N}+' takes the digits.
  EXPECT_EQ(words("gpt-2", "a " + kCyrMod + "! " + kKawi + "." + kExtH + " " + kNagDigits),
            (std::vector<std::string>{"a", " " + kCyrMod, "!", " " + kKawi, ".", kExtH, " " + kNagDigits}));
}

TEST(PreTokenizer, Unicode15LettersLlama3) {
  // One non-letter may lead a letter run; digits go in threes.
  EXPECT_EQ(words("llama-bpe", "!" + kExtH + " " + kNagLetters + " " + kNagDigits + "," + kCyrMod + kKawi),
            (std::vector<std::string>{"!" + kExtH, " " + kNagLetters, " ",
                                      kNagDigit[0] + kNagDigit[1] + kNagDigit[2], kNagDigit[3],
                                      "," + kCyrMod + kKawi}));
}

TEST(PreTokenizer, Unicode15LettersQwen2) {
  // As llama3, but one digit per word.
  EXPECT_EQ(words("qwen2", "!" + kExtH + " " + kNagLetters + " " + kNagDigits + "," + kCyrMod + kKawi),
            (std::vector<std::string>{"!" + kExtH, " " + kNagLetters, " ", kNagDigit[0], kNagDigit[1],
                                      kNagDigit[2], kNagDigit[3], "," + kCyrMod + kKawi}));
}

TEST(PreTokenizer, CaseInsensitiveContractionsAsTheReferenceWritesThem) {
  // The llama3 expression as in the reference's source, with (?i:...), splits
  // like the spelled-out form in the table.
  const std::vector<std::string> re = {
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
  PreTokenizer p(re);
  const std::string text = "HE'S we'Re I'LL x'd";
  std::vector<Span> spans;
  p.split(text, spans);
  std::vector<std::string> got;
  for (const Span& s : spans) got.push_back(text.substr(s.begin, s.end - s.begin));
  const std::vector<std::string> expected = {"HE", "'S", " we", "'Re", " I", "'LL", " x", "'d"};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(words("llama-bpe", text), expected);
}

TEST(PreTokenizer, BadExpressionsAreModelErrors) {
  EXPECT_THROW(PreTokenizer(std::vector<std::string>{R"([\p{L})"}), ModelError);     // unterminated class
  EXPECT_THROW(PreTokenizer(std::vector<std::string>{R"((?x)\p{L})"}), ModelError);  // not rewritable exactly
  EXPECT_THROW(PreTokenizer(std::vector<std::string>{R"((?i)[^\s])"}), ModelError);
}

}  // namespace
}  // namespace ferrite::tokenizer
