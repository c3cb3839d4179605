// Test grammars modelled on the examples llama.cpp ships (json, arithmetic,
// list, chess), written for these tests.
#pragma once

namespace ferrite::grammar::test {

// Any JSON value at the top, an object at the root.
inline constexpr const char* kJsonGrammar = R"GBNF(
# A JSON object, with bounded whitespace between tokens.
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,16})? ws

ws ::= | " " | "\n" [ \t]{0,20}
)GBNF";

// Integer arithmetic with + - * / and parentheses.
inline constexpr const char* kArithmeticGrammar = R"GBNF(
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] ws term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
)GBNF";

// A markdown bullet list.
inline constexpr const char* kListGrammar = R"GBNF(
root ::= item+

# Excludes newlines inside an item
item ::= "- " [^\r\n\x0b\x0c\x85\u2028\u2029]+ "\n"
)GBNF";

// Numbered chess moves in algebraic notation.
inline constexpr const char* kChessGrammar = R"GBNF(
root   ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move   ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn   ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle ::= "O-O" "-O"?
)GBNF";

}  // namespace ferrite::grammar::test
