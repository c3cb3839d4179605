// Recursive-descent Jinja2 parser. Precedence, lowest first:
//   a if c else b  <  or  <  and  <  not  <  comparisons, in, not in  <  + -
//   <  ~  <  * / // %  <  **  <  unary - +  <  filters `|`, tests `is`, calls
//   <  attribute, subscript, call postfixes  <  primaries.
#include "chat/parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "chat/error.h"

namespace ferrite::chat {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : toks_(tokens) {}

  Body run() {
    Body body = parse_body({});
    if (cur().type != TokenType::End) fail("unexpected '" + cur().value + "'");
    return body;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p(p) {
      if (++p.depth_ > kMaxParseDepth) p.fail("template nested too deeply");
    }
    ~DepthGuard() { --p.depth_; }
    Parser& p;
  };

  const Token& cur() const { return toks_[pos_]; }
  const Token& peek(size_t n = 1) const { return toks_[std::min(pos_ + n, toks_.size() - 1)]; }
  void advance() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateSyntaxError(what, cur().line, cur().column);
  }
  bool is_op(const char* op) const { return cur().type == TokenType::Operator && cur().value == op; }
  bool is_name(const char* n) const { return cur().type == TokenType::Name && cur().value == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    advance();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    advance();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "'" + found());
  }
  std::string found() const {
    switch (cur().type) {
      case TokenType::End: return ", found end of template";
      case TokenType::BlockEnd: return ", found '%}'";
      case TokenType::VarEnd: return ", found '}}'";
      default: return ", found '" + cur().value + "'";
    }
  }
  std::string expect_name() {
    if (cur().type != TokenType::Name) fail("expected a name" + found());
    std::string n = cur().value;
    advance();
    return n;
  }
  void expect_block_end() {
    if (cur().type != TokenType::BlockEnd) fail("expected end of block tag '%}'" + found());
    advance();
  }

  // Sets e.depth from its children; refuses trees taller than kMaxExprHeight.
  ExprPtr sized(ExprPtr e) {
    int h = 0;
    for (const auto& c : e->children) {
      if (c) h = std::max(h, c->depth);
    }
    for (const auto& [k, c] : e->kwargs) h = std::max(h, c->depth);
    e->depth = h + 1;
    if (e->depth > kMaxExprHeight) fail("expression nested too deeply");
    return e;
  }

  ExprPtr node(Expr::Kind kind, const Token& at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = at.line;
    e->column = at.column;
    return e;
  }
  StmtPtr stmt(Stmt::Kind kind, const Token& at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = at.line;
    s->column = at.column;
    return s;
  }

  // ---------------------------------------------------------------- statements

  // Parses until a block tag whose keyword is in `ends` (left unconsumed, the
  // position is on the keyword) or the end of input (an error if `ends` is non-empty).
  Body parse_body(std::initializer_list<const char*> ends) {
    DepthGuard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == TokenType::End) {
        if (ends.size() != 0) {
          std::string names;
          for (const char* e : ends) names += std::string(names.empty() ? "" : " or ") + "'" + e + "'";
          fail("unexpected end of template, expected " + names);
        }
        return body;
      }
      if (t.type == TokenType::Text) {
        auto s = stmt(Stmt::Kind::Text, t);
        s->text = t.value;
        body.push_back(std::move(s));
        advance();
      } else if (t.type == TokenType::VarBegin) {
        auto s = stmt(Stmt::Kind::Output, t);
        advance();
        s->expr = parse_tuple_or_expr();
        if (cur().type != TokenType::VarEnd) fail("expected end of print statement '}}'" + found());
        advance();
        body.push_back(std::move(s));
      } else if (t.type == TokenType::BlockBegin) {
        const Token& kw = peek();
        if (kw.type != TokenType::Name) {
          advance();
          fail("expected a statement name" + found());
        }
        for (const char* e : ends) {
          if (kw.value == e) {
            advance();
            return body;
          }
        }
        advance();
        body.push_back(parse_statement());
      } else {
        fail("unexpected token" + found());
      }
    }
  }

  StmtPtr parse_statement() {
    const Token& kw = cur();
    const std::string name = kw.value;
    if (name == "if") return parse_if();
    if (name == "for") return parse_for();
    if (name == "set") return parse_set();
    if (name == "macro") return parse_macro();
    if (name == "call") return parse_call_block();
    if (name == "filter") return parse_filter_block();
    if (name == "with") return parse_with();
    if (name == "generation") {
      auto s = stmt(Stmt::Kind::Scope, kw);
      advance();
      expect_block_end();
      s->body = parse_body({"endgeneration"});
      advance();
      expect_block_end();
      return s;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) fail("'" + name + "' outside of a loop");
      auto s = stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, kw);
      advance();
      expect_block_end();
      return s;
    }
    if (name == "do") {
      auto s = stmt(Stmt::Kind::Do, kw);
      advance();
      s->expr = parse_tuple_or_expr();
      expect_block_end();
      return s;
    }
    if (name == "include" || name == "import" || name == "from" || name == "extends" || name == "block") {
      fail("'" + name + "' is not available in chat templates (no file access)");
    }
    fail("unknown statement '" + name + "'");
  }

  StmtPtr parse_if() {
    auto s = stmt(Stmt::Kind::If, cur());
    advance();
    while (true) {
      ExprPtr cond = parse_tuple_or_expr();
      expect_block_end();
      Body body = parse_body({"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (skip_name("elif")) continue;
      if (skip_name("else")) {
        expect_block_end();
        s->else_body = parse_body({"endif"});
        advance();
      } else {
        advance();  // endif
      }
      expect_block_end();
      return s;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    const bool paren = skip_op("(");
    targets.push_back(expect_name());
    while (skip_op(",")) {
      if (cur().type != TokenType::Name) break;
      targets.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return targets;
  }

  StmtPtr parse_for() {
    auto s = stmt(Stmt::Kind::For, cur());
    advance();
    s->targets = parse_targets();
    if (!skip_name("in")) fail("expected 'in'" + found());
    s->expr = parse_expression(false);
    if (skip_name("if")) s->cond = parse_expression();
    if (skip_name("recursive")) fail("recursive loops are not supported");
    expect_block_end();
    ++loop_depth_;
    s->body = parse_body({"endfor", "else"});
    --loop_depth_;
    if (skip_name("else")) {
      expect_block_end();
      s->else_body = parse_body({"endfor"});
      advance();
    } else {
      advance();
    }
    expect_block_end();
    return s;
  }

  StmtPtr parse_set() {
    const Token& at = cur();
    advance();
    if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == ".") {
      auto s = stmt(Stmt::Kind::Set, at);
      s->targets.push_back(expect_name());
      advance();  // .
      s->attr = expect_name();
      expect_op("=");
      s->expr = parse_tuple_or_expr();
      expect_block_end();
      return s;
    }
    std::vector<std::string> targets = parse_targets();
    if (skip_op("=")) {
      auto s = stmt(Stmt::Kind::Set, at);
      s->targets = std::move(targets);
      s->expr = parse_tuple_or_expr();
      expect_block_end();
      return s;
    }
    if (targets.size() != 1) fail("a block set assigns one name");
    auto s = stmt(Stmt::Kind::SetBlock, at);
    s->targets = std::move(targets);
    while (skip_op("|")) s->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    s->body = parse_body({"endset"});
    advance();
    expect_block_end();
    return s;
  }

  void parse_params(std::vector<MacroParam>& params) {
    expect_op("(");
    while (!is_op(")")) {
      if (!params.empty()) expect_op(",");
      if (is_op(")")) break;
      MacroParam p;
      p.name = expect_name();
      if (skip_op("=")) p.default_value = parse_expression();
      params.push_back(std::move(p));
    }
    advance();
  }

  StmtPtr parse_macro() {
    auto s = stmt(Stmt::Kind::Macro, cur());
    advance();
    s->name = expect_name();
    parse_params(s->params);
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endmacro"});
    loop_depth_ = saved;
    advance();
    expect_block_end();
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = stmt(Stmt::Kind::CallBlock, cur());
    advance();
    if (is_op("(")) parse_params(s->params);
    s->expr = parse_expression();
    if (s->expr->kind != Expr::Kind::Call) fail("expected a call after 'call'");
    expect_block_end();
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_body({"endcall"});
    loop_depth_ = saved;
    advance();
    expect_block_end();
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = stmt(Stmt::Kind::FilterBlock, cur());
    advance();
    s->filters.push_back(parse_filter(nullptr));
    while (skip_op("|")) s->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    s->body = parse_body({"endfilter"});
    advance();
    expect_block_end();
    return s;
  }

  StmtPtr parse_with() {
    auto s = stmt(Stmt::Kind::With, cur());
    advance();
    while (cur().type != TokenType::BlockEnd) {
      if (!s->params.empty()) expect_op(",");
      MacroParam p;
      p.name = expect_name();
      expect_op("=");
      p.default_value = parse_expression();
      s->params.push_back(std::move(p));
    }
    expect_block_end();
    s->body = parse_body({"endwith"});
    advance();
    expect_block_end();
    return s;
  }

  // --------------------------------------------------------------- expressions

  // An expression, or a tuple when commas follow (`{{ a, b }}`, `set x = 1, 2`).
  ExprPtr parse_tuple_or_expr() {
    const Token& at = cur();
    ExprPtr first = parse_expression();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::Tuple, at);
    t->children.push_back(std::move(first));
    while (skip_op(",")) {
      if (cur().type == TokenType::BlockEnd || cur().type == TokenType::VarEnd) break;
      t->children.push_back(parse_expression());
    }
    return sized(std::move(t));
  }

  ExprPtr parse_expression(bool with_condexpr = true) {
    DepthGuard guard(*this);
    if (!with_condexpr) return parse_or();
    const Token& at = cur();
    ExprPtr expr = parse_or();
    while (skip_name("if")) {
      auto c = node(Expr::Kind::Cond, at);
      ExprPtr cond = parse_or();
      ExprPtr other = skip_name("else") ? parse_expression() : nullptr;
      c->children.push_back(std::move(expr));
      c->children.push_back(std::move(cond));
      c->children.push_back(std::move(other));
      expr = sized(std::move(c));
    }
    return expr;
  }

  ExprPtr binary(Expr::Kind kind, const Token& at, std::string op, ExprPtr a, ExprPtr b) {
    auto e = node(kind, at);
    e->name = std::move(op);
    e->children.push_back(std::move(a));
    e->children.push_back(std::move(b));
    return sized(std::move(e));
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name("or")) {
      const Token& at = cur();
      advance();
      left = binary(Expr::Kind::Or, at, "or", std::move(left), parse_and());
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name("and")) {
      const Token& at = cur();
      advance();
      left = binary(Expr::Kind::And, at, "and", std::move(left), parse_not());
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = node(Expr::Kind::Unary, cur());
      advance();
      e->name = "not";
      e->children.push_back(parse_not());
      return sized(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& at = cur();
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == TokenType::Operator &&
          (cur().value == "==" || cur().value == "!=" || cur().value == "<" || cur().value == "<=" ||
           cur().value == ">" || cur().value == ">=")) {
        op = cur().value;
        advance();
      } else if (is_name("in")) {
        op = "in";
        advance();
      } else if (is_name("not") && peek().type == TokenType::Name && peek().value == "in") {
        op = "notin";
        advance();
        advance();
      } else {
        break;
      }
      if (!cmp) {
        cmp = node(Expr::Kind::Compare, at);
        cmp->children.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->children.push_back(parse_math1());
    }
    return cmp ? sized(std::move(cmp)) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      const Token& at = cur();
      std::string op = at.value;
      advance();
      left = binary(Expr::Kind::Binary, at, op, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (is_op("~")) {
      const Token& at = cur();
      advance();
      left = binary(Expr::Kind::Binary, at, "~", std::move(left), parse_math2());
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& at = cur();
      std::string op = at.value;
      advance();
      left = binary(Expr::Kind::Binary, at, op, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op("**")) {
      const Token& at = cur();
      advance();
      left = binary(Expr::Kind::Binary, at, "**", std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::Unary, cur());
      e->name = cur().value;
      advance();
      e->children.push_back(parse_unary(false));
      e = sized(std::move(e));
    } else {
      e = parse_postfix(parse_primary());
    }
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    DepthGuard guard(*this);
    const Token& t = cur();
    switch (t.type) {
      case TokenType::Name: {
        auto e = node(Expr::Kind::Literal, t);
        if (t.value == "true" || t.value == "True") {
          e->literal = Value::boolean(true);
        } else if (t.value == "false" || t.value == "False") {
          e->literal = Value::boolean(false);
        } else if (t.value == "none" || t.value == "None") {
          e->literal = Value::none();
        } else {
          e->kind = Expr::Kind::Name;
          e->name = t.value;
        }
        advance();
        return e;
      }
      case TokenType::String: {
        auto e = node(Expr::Kind::Literal, t);
        std::string s;
        while (cur().type == TokenType::String) {  // adjacent literals concatenate
          s += cur().value;
          advance();
        }
        e->literal = Value::string(std::move(s));
        return e;
      }
      case TokenType::Integer: {
        auto e = node(Expr::Kind::Literal, t);
        int64_t v = 0;
        auto res = std::from_chars(t.value.data(), t.value.data() + t.value.size(), v);
        if (res.ec != std::errc()) fail("integer literal out of range");
        e->literal = Value::integer(v);
        advance();
        return e;
      }
      case TokenType::Float: {
        auto e = node(Expr::Kind::Literal, t);
        e->literal = Value::number(std::strtod(t.value.c_str(), nullptr));
        advance();
        return e;
      }
      case TokenType::Operator:
        if (t.value == "(") return parse_paren();
        if (t.value == "[") return parse_list();
        if (t.value == "{") return parse_dict();
        break;
      default: break;
    }
    fail("unexpected token" + found());
  }

  ExprPtr parse_paren() {
    const Token& at = cur();
    advance();
    if (skip_op(")")) return node(Expr::Kind::Tuple, at);
    ExprPtr first = parse_expression();
    if (skip_op(")")) return first;
    auto t = node(Expr::Kind::Tuple, at);
    t->children.push_back(std::move(first));
    while (skip_op(",")) {
      if (is_op(")")) break;
      t->children.push_back(parse_expression());
    }
    expect_op(")");
    return sized(std::move(t));
  }

  ExprPtr parse_list() {
    auto e = node(Expr::Kind::List, cur());
    advance();
    while (!is_op("]")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("]")) break;
      e->children.push_back(parse_expression());
    }
    advance();
    return sized(std::move(e));
  }

  ExprPtr parse_dict() {
    auto e = node(Expr::Kind::Dict, cur());
    advance();
    while (!is_op("}")) {
      if (!e->children.empty()) expect_op(",");
      if (is_op("}")) break;
      e->children.push_back(parse_expression());
      expect_op(":");
      e->children.push_back(parse_expression());
    }
    advance();
    return sized(std::move(e));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        const Token& at = cur();
        advance();
        if (cur().type == TokenType::Integer) {  // foo.0 == foo[0]
          auto g = node(Expr::Kind::GetItem, at);
          g->children.push_back(std::move(e));
          auto idx = node(Expr::Kind::Literal, cur());
          idx->literal = Value::integer(std::strtoll(cur().value.c_str(), nullptr, 10));
          advance();
          g->children.push_back(std::move(idx));
          e = sized(std::move(g));
          continue;
        }
        auto g = node(Expr::Kind::GetAttr, at);
        g->name = expect_name();
        g->children.push_back(std::move(e));
        e = sized(std::move(g));
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr target) {
    DepthGuard guard(*this);
    const Token& at = cur();
    advance();
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    while (!is_op("]")) {
      if (is_op(":")) {
        is_slice = true;
        if (++part > 2) fail("too many ':' in slice");
        advance();
        continue;
      }
      if (parts[part]) fail("expected ']' or ':'" + found());
      parts[part] = parse_expression();
    }
    advance();
    if (!is_slice) {
      if (!parts[0]) fail("empty subscript");
      auto g = node(Expr::Kind::GetItem, at);
      g->children.push_back(std::move(target));
      g->children.push_back(std::move(parts[0]));
      return sized(std::move(g));
    }
    auto s = node(Expr::Kind::Slice, at);
    s->children.push_back(std::move(target));
    for (auto& p : parts) s->children.push_back(std::move(p));
    return sized(std::move(s));
  }

  void parse_args(Expr& e) {
    expect_op("(");
    bool first = true;
    while (!is_op(")")) {
      if (!first) expect_op(",");
      first = false;
      if (is_op(")")) break;
      if (cur().type == TokenType::Name && peek().type == TokenType::Operator && peek().value == "=") {
        std::string key = cur().value;
        advance();
        advance();
        e.kwargs.emplace_back(std::move(key), parse_expression());
      } else {
        if (!e.kwargs.empty()) fail("positional argument after keyword argument");
        e.children.push_back(parse_expression());
      }
    }
    advance();
  }

  ExprPtr parse_call(ExprPtr callee) {
    DepthGuard guard(*this);
    auto c = node(Expr::Kind::Call, cur());
    c->children.push_back(std::move(callee));
    parse_args(*c);
    return sized(std::move(c));
  }

  // `name[.name...][(args)]` after '|'; `input` may be null (filter blocks).
  ExprPtr parse_filter(ExprPtr input) {
    DepthGuard guard(*this);
    auto f = node(Expr::Kind::Filter, cur());
    f->name = expect_name();
    while (skip_op(".")) f->name += "." + expect_name();
    f->children.push_back(std::move(input));
    if (is_op("(")) parse_args(*f);
    return sized(std::move(f));
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        e = parse_test(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_test(ExprPtr input) {
    DepthGuard guard(*this);
    auto t = node(Expr::Kind::Test, cur());
    advance();  // is
    if (skip_name("not")) t->negated = true;
    t->name = expect_name();
    while (skip_op(".")) t->name += "." + expect_name();
    t->children.push_back(std::move(input));
    if (is_op("(")) {
      parse_args(*t);
    } else if ((cur().type == TokenType::Name || cur().type == TokenType::String ||
                cur().type == TokenType::Integer || cur().type == TokenType::Float || is_op("[") ||
                is_op("{") || is_op("(")) &&
               !is_name("else") && !is_name("or") && !is_name("and")) {
      if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
      t->children.push_back(parse_postfix(parse_primary()));
    }
    return sized(std::move(t));
  }

  const std::vector<Token>& toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens) { return Parser(tokens).run(); }

}  // namespace ferrite::chat
