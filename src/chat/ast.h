// Syntax tree of a parsed template: expressions and statements. Nodes own
// their children; a Template owns the root.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace ferrite::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Expr {
  enum class Kind {
    Literal,  // literal
    Name,     // name
    List,     // children: items
    Tuple,    // children: items (a list at run time)
    Dict,     // children: key0, value0, key1, value1, ...
    Unary,    // name: "not" | "-" | "+"; children[0]
    Binary,   // name: operator; children[0], children[1]
    And,      // children[0], children[1]
    Or,
    Compare,  // children[0] ops[0] children[1] ops[1] children[2] ...
    Cond,     // children: value_if_true, condition, value_if_false (may be null)
    GetAttr,  // children[0].name
    GetItem,  // children[0][children[1]]
    Slice,    // children: target, start, stop, step (each may be null)
    Call,     // children[0](children[1..], kwargs)
    Filter,   // children[0] | name(children[1..], kwargs); children[0] null in filter blocks
    Test,     // children[0] is [not] name(children[1..]); negated
  };
  Kind kind;
  int line = 0;
  int column = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;
  int depth = 1;  // height of this subtree (bounded by the parser)
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // may be null
};

struct Stmt {
  enum class Kind {
    Text,         // text
    Output,       // {{ expr }}
    If,           // branches (cond, body); else_body
    For,          // targets in expr [if cond]: body; else_body
    Set,          // targets = expr, or ns_name.attr = expr
    SetBlock,     // targets[0] = rendered body | filters
    Macro,        // name(params): body
    CallBlock,    // {% call(params) expr %} body {% endcall %}
    FilterBlock,  // filters applied to the rendered body
    Break,
    Continue,
    With,         // params as assignments; body in a new scope
    Do,           // expr evaluated, result dropped
    Scope,        // body rendered in place (generation blocks)
  };
  Kind kind;
  int line = 0;
  int column = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::string> targets;
  std::string attr;  // Set on a namespace: targets[0] is the namespace, attr the attribute
  std::string name;
  std::vector<MacroParam> params;
  std::vector<ExprPtr> filters;  // Filter expressions with a null input
};

}  // namespace ferrite::chat
