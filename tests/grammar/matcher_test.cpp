// Matcher on whole strings: the example grammars accept the sentences of
// their language and reject near misses; prefixes stay alive until the first
// wrong code point; cloning, resetting and UTF-8 split across calls.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "example_grammars.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "full_match.h"

namespace ferrite::grammar {
namespace {

// Feeds one byte at a time; returns the number of bytes accepted.
size_t accepted_prefix(const Grammar& g, const std::string& text) {
  Matcher m(g);
  for (size_t i = 0; i < text.size(); ++i) {
    if (!m.accept_bytes(text.substr(i, 1))) return i;
  }
  return text.size();
}

void check_language(const char* grammar_text, const std::vector<std::string>& good,
                    const std::vector<std::string>& bad) {
  const Grammar g = Grammar::parse(grammar_text);
  for (const auto& s : good) {
    EXPECT_TRUE(full_match(g, s)) << "should accept: " << s;
    EXPECT_EQ(accepted_prefix(g, s), s.size()) << s;
  }
  for (const auto& s : bad) EXPECT_FALSE(full_match(g, s)) << "should reject: " << s;
}

TEST(GrammarMatcher, JsonExample) {
  check_language(test::kJsonGrammar,
                 {
                     "{}",
                     "{\"a\": 1}",
                     "{\"a\":[1, 2.5, -3e10, true, false, null]}",
                     "{\"nested\": {\"x\": {\"y\": []}}, \"s\": \"q\\\"uo\\\\te\\u00e9\\n\"}",
                     "{\n  \"k\": \"v\",\n  \"n\": -0.5E+3\n}",
                     "{\"unicode\": \"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"}",
                 },
                 {
                     "",
                     "[]",                   // root is an object
                     "{",                    // unfinished
                     "{\"a\" 1}",            // missing colon
                     "{\"a\": 1,}",          // trailing comma
                     "{a: 1}",               // unquoted key
                     "{\"a\": 01x}",         // junk in a number
                     "{\"a\": tru}",         //
                     "{\"a\": \"\\x\"}",     // bad escape
                     "{\"a\": \"tab\there\"}",  // raw control character
                     "{\"a\": 1}}",
                 });
}

TEST(GrammarMatcher, ArithmeticExample) {
  check_language(test::kArithmeticGrammar,
                 {"1+2=3\n", "(a + b) * c = x\n", "x_1/ (2 - y)=z\n1=1\n", "((7))=7\n"},
                 {"", "1+2=3", "1++2=3\n", "(1+2=3\n", "A=1\n", "1 = \n"});
}

TEST(GrammarMatcher, ListExample) {
  check_language(test::kListGrammar, {"- milk\n", "- eggs\n- flour and \xE2\x82\xAC\n"},
                 {"", "- \n", "* milk\n", "- milk", "- a\xE2\x80\xA8" "b\n", "- a\n\n"});
}

TEST(GrammarMatcher, ChessExample) {
  check_language(test::kChessGrammar,
                 {"1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n3. O-O-O Qxd8#\n",
                  "1. e4 e5\n2. exd5 e1=Q+\n"},
                 {"1. e4 e5\n", "1. e9 e5\n2. a3 a6\n", "1. e4\n2. e5 e6\n",
                  "1. e4 e5\n2. Zf3 Nc6\n", "1. e4 e5\n2. O-O-O-O a6\n"});
}

TEST(GrammarMatcher, RejectionLeavesStateUnchanged) {
  const Grammar g = Grammar::parse("root ::= \"ab\" | \"ac\"");
  Matcher m(g);
  EXPECT_TRUE(m.accept('a'));
  EXPECT_FALSE(m.accept('x'));
  EXPECT_FALSE(m.accept_bytes("cb"));  // c is fine, b is not: all or nothing
  EXPECT_TRUE(m.accept('c'));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.is_finished());
  EXPECT_FALSE(m.accept('c'));
}

TEST(GrammarMatcher, PrefixStopsAtFirstBadCodePoint) {
  const Grammar g = Grammar::parse(test::kJsonGrammar);
  EXPECT_EQ(accepted_prefix(g, "{\"a\": [1, 2,, 3]}"), 12u);
  EXPECT_EQ(accepted_prefix(g, "{\"a\": nul}"), 9u);
  EXPECT_EQ(accepted_prefix(g, "x"), 0u);
}

TEST(GrammarMatcher, SplitUtf8AcrossCalls) {
  const Grammar g = Grammar::parse("root ::= [\\u00e0-\\u00ff] \"\\u20ac\" [\\U0001F600-\\U0001F64F]");
  Matcher m(g);
  const std::string text = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // é € 😀
  EXPECT_TRUE(m.accept_bytes(text.substr(0, 1)));
  EXPECT_EQ(m.pending_bytes(), 1u);
  EXPECT_FALSE(m.is_complete());
  EXPECT_FALSE(m.accept('x'));  // a code point cannot interrupt a sequence
  EXPECT_TRUE(m.accept_bytes(text.substr(1, 2)));
  EXPECT_TRUE(m.accept_bytes(text.substr(3, 1)));
  EXPECT_TRUE(m.accept_bytes(text.substr(4, 2)));
  EXPECT_TRUE(m.accept_bytes(text.substr(6)));
  EXPECT_TRUE(m.is_complete());

  Matcher n(g);
  EXPECT_FALSE(n.accept_bytes("\xC3\xA9\xE2\x82\xAD"));  // U+20AD is not the euro sign
  EXPECT_TRUE(n.accept_bytes("\xC3\xA9\xE2"));
  EXPECT_FALSE(n.accept_bytes("\x81"));                   // E2 81 .. cannot become U+20AC
  EXPECT_FALSE(n.accept_bytes("\xC3"));                   // not a continuation byte
  EXPECT_FALSE(Matcher(g).accept_bytes("\xC0\x80"));      // overlong
  EXPECT_FALSE(Matcher(g).accept_bytes("\xBF"));          // stray continuation
}

TEST(GrammarMatcher, CloneAndDetachAreIndependent) {
  const Grammar g = Grammar::parse("root ::= \"a\"+ \"b\"");
  Matcher m(g);
  ASSERT_TRUE(m.accept_bytes("aa"));
  Matcher c = m.clone();
  Matcher d = m.detach();
  ASSERT_TRUE(c.accept('b'));
  EXPECT_TRUE(c.is_complete());
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(d.accept_bytes("ab"));
  EXPECT_TRUE(d.is_complete());
  EXPECT_TRUE(m.accept('a'));
  m.reset();
  EXPECT_FALSE(m.accept('b'));
  EXPECT_TRUE(m.accept('a'));
}

TEST(GrammarMatcher, AmbiguousGrammarsStayBounded) {
  // Every split of a run of x's is a distinct parse; stack sets stay small
  // because identical stacks are merged.
  const Grammar g = Grammar::parse("root ::= (x | x x | x x x)*\nx ::= \"x\"");
  Matcher m(g);
  EXPECT_TRUE(m.accept_bytes(std::string(2000, 'x')));
  EXPECT_TRUE(m.is_complete());
  // Nested right recursion grows the stacks with the input, as it must.
  const Grammar deep = Grammar::parse("root ::= \"(\" root \")\" | \"\"");
  Matcher n(deep);
  EXPECT_TRUE(n.accept_bytes(std::string(3000, '(') + std::string(3000, ')')));
  EXPECT_TRUE(n.is_complete());
}

TEST(GrammarMatcher, TooManyStacksIsAnError) {
  // 2^k distinct pending continuations: a grammar whose stack sets explode.
  const Grammar g = Grammar::parse("root ::= \"a\" root \"b\" | \"a\" root \"c\" | \"\"");
  MatcherLimits limits;
  limits.max_stacks = 64;
  Matcher m(g, limits);
  EXPECT_THROW(
      {
        for (int i = 0; i < 20; ++i) (void)m.accept('a');
      },
      InvalidArgument);
}

TEST(GrammarMatcher, CompactionKeepsTheState) {
  const Grammar g = Grammar::parse(test::kJsonGrammar);
  MatcherLimits limits;
  limits.max_store_entries = 200;  // compact very often
  Matcher m(g, limits);
  const std::string text = "{\"a\": [1, 2, {\"b\": \"c\\u00e9\"}], \"d\": -1.5e3, \"e\": null}";
  for (char c : text) ASSERT_TRUE(m.accept_bytes(std::string(1, c)));
  EXPECT_TRUE(m.is_complete());
}

}  // namespace
}  // namespace ferrite::grammar
