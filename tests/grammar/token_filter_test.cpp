// Token filtering: on a hand-made vocabulary whose multi-byte characters are
// split across tokens, the allowed set at every step is written out by hand;
// on a larger random vocabulary the trie walk agrees with checking each token
// on its own, along random constrained walks.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "example_grammars.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_trie.h"

namespace ferrite::grammar {
namespace {

std::set<size_t> mask_set(const TokenMask& m) {
  std::set<size_t> out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (m.test(i)) out.insert(i);
  }
  return out;
}

const std::vector<std::string> kPieces = {
    "</s>",          // 0  end of generation
    "{",             // 1
    "}",             // 2
    "\"",            // 3
    "a",             // 4
    "ab",            // 5
    "\":",           // 6
    " ",             // 7
    "\xC3",          // 8  first byte of é
    "\xA9",          // 9  second byte of é
    "\xC3\xA9",      // 10 é
    "\xE2\x82",      // 11 first two bytes of €
    "\xAC\"",        // 12 last byte of € and a quote
    "",              // 13 a control token without text
    "\xFF",          // 14 never valid UTF-8
    "1",             // 15
    "{\"",           // 16
    ": ",            // 17
    ":",             // 18
    "\xE2\x82\xAC",  // 19 €
};
const std::vector<int32_t> kEog = {0};
constexpr const char* kObjectGrammar =
    "root ::= \"{\\\"\" name \"\\\": \" num \"}\"\n"
    "name ::= ([a-b] | \"\\u00e9\" | \"\\u20ac\")+\n"
    "num ::= [0-9]+\n";

TEST(GrammarTokenFilter, HandMadeVocabularyStepByStep) {
  const Grammar g = Grammar::parse(kObjectGrammar);
  const TokenTrie trie(kPieces, kEog);
  Matcher m(g);
  struct Step {
    const char* take;            // piece accepted before checking
    std::set<size_t> expected;   // allowed tokens after it
  };
  const std::vector<Step> steps = {
      {"", {1, 16}},
      {"{", {3}},
      {"\"", {4, 5, 8, 10, 11, 19}},
      {"a", {3, 4, 5, 6, 8, 10, 11, 19}},
      {"\xC3", {9}},                          // only A9 completes an allowed é
      {"\xA9", {3, 4, 5, 6, 8, 10, 11, 19}},
      {"\xE2\x82", {12}},                     // AC" completes € and closes the name
      {"\xAC\"", {17, 18}},
      {":", {7}},
      {" ", {15}},
      {"1", {2, 15}},
      {"}", {0}},                             // only end of generation is left
  };
  for (const Step& s : steps) {
    ASSERT_TRUE(m.accept_token(s.take)) << s.take;
    EXPECT_EQ(mask_set(m.allowed(trie)), s.expected) << "after " << s.take;
    // The convenience overload and the single-token check agree.
    const std::vector<bool> v = m.allowed(kPieces, kEog);
    for (size_t t = 0; t < kPieces.size(); ++t) {
      EXPECT_EQ(v[t], s.expected.count(t) == 1) << "token " << t << " after " << s.take;
      if (t != 0) {
        EXPECT_EQ(m.allows(kPieces[t]), s.expected.count(t) == 1) << t;
      }
    }
  }
  EXPECT_TRUE(m.is_complete());
}

// Random pieces of 1-4 code points from a mixed alphabet, some cut inside a
// multi-byte character, plus every single byte.
std::vector<std::string> random_vocabulary(size_t n, std::mt19937& rng) {
  const std::vector<std::string> alphabet = {
      "{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "b", "e", "l", "n", "r", "s", "t", "u",
      "0", "1", "9", "-", ".", "E", "\\", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\t"};
  std::vector<std::string> pieces = {"<eos>"};
  for (int b = 0; b < 256; ++b) pieces.push_back(std::string(1, static_cast<char>(b)));
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> len(1, 4);
  while (pieces.size() < n) {
    std::string p;
    for (int i = len(rng); i > 0; --i) p += alphabet[pick(rng)];
    if (rng() % 5 == 0 && p.size() > 1) p.resize(1 + rng() % (p.size() - 1));  // may split UTF-8
    if (rng() % 7 == 0 && p.size() > 1) p = p.substr(1 + rng() % (p.size() - 1));
    pieces.push_back(p);
  }
  return pieces;
}

TEST(GrammarTokenFilter, TrieAgreesWithPerTokenCheckOnRandomWalks) {
  std::mt19937 rng(1234);
  const std::vector<std::string> pieces = random_vocabulary(4000, rng);
  const std::vector<int32_t> eog = {0};
  const TokenTrie trie(pieces, eog);
  const Grammar g = Grammar::parse(test::kJsonGrammar);
  int steps_taken = 0;
  for (int walk = 0; walk < 8; ++walk) {
    Matcher m(g);
    std::string text;
    for (int step = 0; step < 40; ++step) {
      const TokenMask& mask = m.allowed(trie);
      std::vector<size_t> ok;
      for (size_t t = 1; t < pieces.size(); ++t) {
        ASSERT_EQ(mask.test(t), m.allows(pieces[t])) << "token " << t << " after " << text;
        if (mask.test(t)) ok.push_back(t);
      }
      ASSERT_EQ(mask.test(0), m.is_complete());
      if (mask.test(0) && (step > 10 || ok.empty())) break;
      ASSERT_FALSE(ok.empty()) << "dead end after " << text;
      ++steps_taken;
      const size_t t = ok[rng() % ok.size()];
      ASSERT_TRUE(m.accept_token(pieces[t]));
      text += pieces[t];
    }
  }
  EXPECT_GT(steps_taken, 100);
}

TEST(GrammarTokenFilter, MasksAreCachedPerState) {
  // The same state reached twice gives the same mask, also across clones.
  const Grammar g = Grammar::parse(test::kJsonGrammar);
  const TokenTrie trie(kPieces, kEog);
  Matcher m(g);
  ASSERT_TRUE(m.accept_bytes("{\"k\": \"ab"));
  const std::set<size_t> first = mask_set(m.allowed(trie));
  Matcher c = m.clone();
  ASSERT_TRUE(m.accept_bytes("a"));
  EXPECT_EQ(mask_set(m.allowed(trie)), first);
  EXPECT_EQ(mask_set(c.allowed(trie)), first);
  EXPECT_TRUE(first.count(4) && first.count(3) && first.count(10) && first.count(19));
  EXPECT_FALSE(first.count(0) || first.count(13) || first.count(14) || first.count(9));
}

}  // namespace
}  // namespace ferrite::grammar
