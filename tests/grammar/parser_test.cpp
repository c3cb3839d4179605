// GBNF parser: the syntax llama.cpp users write, and clear errors (with line
// and column) for malformed, undefined, left-recursive and oversized grammars.
#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "full_match.h"

namespace ferrite::grammar {
namespace {

// Expects parse(text) to fail at (line, column) with `needle` in the message.
void expect_error(const std::string& text, size_t line, size_t column, const std::string& needle) {
  try {
    (void)Grammar::parse(text);
    ADD_FAILURE() << "parsed without error: " << text;
  } catch (const GrammarError& e) {
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(GrammarParser, LiteralsAndEscapes) {
  const Grammar g = Grammar::parse(R"(root ::= "a\n\t\"\\\x41\u00e9\U0001F600")");
  EXPECT_TRUE(full_match(g, "a\n\t\"\\A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_FALSE(full_match(g, "a\n\t\"\\A\xC3\xA9"));
}

TEST(GrammarParser, CharacterClasses) {
  const Grammar g = Grammar::parse(R"(root ::= [a-cx] [^0-9] . [\]\-] [\u0100-\u0101])");
  EXPECT_TRUE(full_match(g, "bz!]\xC4\x80"));
  EXPECT_TRUE(full_match(g, "x\xE2\x82\xAC" "\n-\xC4\x81"));
  EXPECT_FALSE(full_match(g, "d!!]\xC4\x80"));   // d not in [a-cx]
  EXPECT_FALSE(full_match(g, "a5!]\xC4\x80"));   // 5 in [^0-9] is excluded
  EXPECT_FALSE(full_match(g, "a!!a\xC4\x80"));   // a not in [\]\-]
  EXPECT_FALSE(full_match(g, "a!!]\xC4\x82"));   // U+0102 outside
}

TEST(GrammarParser, Repetitions) {
  const Grammar g = Grammar::parse(
      "root ::= \"a\"* \"-\" \"b\"+ \"-\" \"c\"? \"-\" \"d\"{2} \"-\" \"e\"{1,3} \"-\" \"f\"{2,} "
      "\"-\" \"g\"{,2}");
  EXPECT_TRUE(full_match(g, "-b--dd-e-ff-"));
  EXPECT_TRUE(full_match(g, "aaa-bbb-c-dd-eee-fffff-gg"));
  EXPECT_FALSE(full_match(g, "--c-dd-e-ff-"));     // b+ needs one
  EXPECT_FALSE(full_match(g, "-b-cc-dd-e-ff-"));   // c? at most one
  EXPECT_FALSE(full_match(g, "-b--d-e-ff-"));      // d{2}
  EXPECT_FALSE(full_match(g, "-b--dd-eeee-ff-"));  // e{1,3}
  EXPECT_FALSE(full_match(g, "-b--dd-e-f-"));      // f{2,}
  EXPECT_FALSE(full_match(g, "-b--dd-e-ff-ggg"));  // g{,2}
}

TEST(GrammarParser, GroupsAlternativesAndRepeatedLiterals) {
  const Grammar g = Grammar::parse(R"(
root ::= ("ab" | "c" ("d" | "e")+)+ "ab"{2}  # a comment
)");
  EXPECT_TRUE(full_match(g, "ababab"));
  EXPECT_TRUE(full_match(g, "cdedabcdabab"));
  EXPECT_FALSE(full_match(g, "abab"));  // the group needs one occurrence before "abab"
  EXPECT_FALSE(full_match(g, "cabab"));
}

TEST(GrammarParser, MultiLineRulesAndContinuation) {
  const Grammar g = Grammar::parse(
      "root ::= greeting\n"
      "  | farewell\n"
      "greeting ::= (\n"
      "   \"hi\"   # inside parentheses newlines are spaces\n"
      "   \" there\"\n"
      ")\r\n"
      "farewell ::= \"bye\"\n");
  EXPECT_TRUE(full_match(g, "hi there"));
  EXPECT_TRUE(full_match(g, "bye"));
  EXPECT_FALSE(full_match(g, "hi"));
}

TEST(GrammarParser, AlternativeRoot) {
  const Grammar g = Grammar::parse("root ::= \"x\"\nanswer ::= \"yes\" | \"no\"", "answer");
  EXPECT_TRUE(full_match(g, "no"));
  EXPECT_FALSE(full_match(g, "x"));
}

TEST(GrammarParser, ToGbnfRoundTrips) {
  const std::string text = R"(root ::= [a-c]+ ("\"" [^\]\\] | .)? "\x00\u2028" item{1,3}
item ::= "-" | [\[\^-])";
  const Grammar g = Grammar::parse(text);
  const Grammar again = Grammar::parse(g.to_gbnf());
  for (const std::string& s : {std::string("ab\"x\0\xE2\x80\xA8-", 9), std::string("c!\0\xE2\x80\xA8[^-", 9),
                              std::string("a\0\xE2\x80\xA8-", 6)}) {
    EXPECT_TRUE(full_match(g, s));
    EXPECT_TRUE(full_match(again, s));
  }
  EXPECT_FALSE(full_match(again, std::string("a\0\xE2\x80\xA8----", 9)));
}

TEST(GrammarParser, SyntaxErrorsHaveLineAndColumn) {
  expect_error("root ::= \"abc", 1, 10, "unterminated string");
  expect_error("root ::= \"a\"\nfoo ::= [abc", 2, 9, "unterminated character class");
  expect_error("root ::= \"a\"\n  bar = \"b\"", 2, 7, "expected '::='");
  expect_error("root ::= ( \"a\" ", 1, 10, "unclosed '('");
  expect_error("root ::= \"a\" )", 1, 14, "unexpected ')'");
  expect_error("root ::= * \"a\"", 1, 10, "must follow an item");
  expect_error("root ::= \"a\"{3,1}", 1, 13, "below its minimum");
  expect_error("root ::= \"a\"{2", 1, 13, "expected '}'");
  expect_error("root ::= [z-a]", 1, 11, "out of order");
  expect_error("root ::= \"\\q\"", 1, 11, "unknown escape");
  expect_error("root ::= \"\\x4\"", 1, 11, "hex digits");
  expect_error("root ::= \"\\U00110000\"", 1, 11, "beyond U+10FFFF");
  expect_error("root ::= \"a\"\nroot ::= \"b\"", 2, 1, "defined twice");
  expect_error("root ::= \"\xFF\"", 1, 11, "invalid UTF-8");
  expect_error("   \n# only a comment\n", 3, 1, "empty");
}

TEST(GrammarParser, UndefinedRule) {
  expect_error("root ::= item\nitem ::= \"a\" thing", 2, 14, "undefined rule 'thing'");
}

TEST(GrammarParser, MissingRoot) {
  EXPECT_THROW(Grammar::parse("start ::= \"a\""), GrammarError);
  EXPECT_THROW(Grammar::parse("root ::= \"a\"", "start"), GrammarError);
}

TEST(GrammarParser, LeftRecursionIsRefused) {
  for (const char* text : {
           "root ::= root \"a\" | \"b\"",                             // direct
           "root ::= x \"a\"\nx ::= y \"b\" | \"c\"\ny ::= root",    // indirect
           "root ::= e root \"a\" | \"b\"\ne ::= \"x\"?",             // through an empty rule
       }) {
    try {
      (void)Grammar::parse(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const GrammarError& e) {
      EXPECT_NE(std::string(e.what()).find("left recursion"), std::string::npos) << e.what();
    }
  }
  // Right recursion and repetitions of empty things are fine.
  const Grammar g = Grammar::parse("root ::= \"(\" root \")\" | (\"\")* | (\"x\"?)*");
  EXPECT_TRUE(full_match(g, "((()))"));
  EXPECT_TRUE(full_match(g, "((xxx))"));
  EXPECT_FALSE(full_match(g, "(()"));
}

TEST(GrammarParser, LimitsStopHostileGrammars) {
  Limits small;
  small.max_nesting = 10;
  EXPECT_THROW(Grammar::parse("root ::= " + std::string(20, '(') + "\"a\"" + std::string(20, ')'),
                              "root", small),
               GrammarError);
  small.max_elements = 1000;
  // 10 nested {0,100} would expand to 10^20 paths but only ~ n*k elements;
  // {1000} copies twice exceed the element budget.
  EXPECT_THROW(Grammar::parse("root ::= (\"a\"{999}){999}", "root", small), GrammarError);
  EXPECT_THROW(Grammar::parse("root ::= \"a\"{1000000}"), GrammarError);
  small.max_text_bytes = 16;
  EXPECT_THROW(Grammar::parse("root ::= \"aaaaaaaaaaaaaaaaaaaaaa\"", "root", small), GrammarError);
}

}  // namespace
}  // namespace ferrite::grammar
