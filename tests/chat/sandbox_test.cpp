// Syntax errors carry line and column; hostile templates end in a typed
// error (TemplateLimitError / TemplateRenderError), never a hang or crash.
#include <atomic>
#include <string>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "support/test_data.h"

namespace ferrite::chat {
namespace {

std::string render(const std::string& src, const Json& ctx = Json::object(), const RenderOptions& opt = {}) {
  return Template::parse(src).render(ctx, opt);
}

template <typename E>
E expect_throw(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    throw;
  }
  ADD_FAILURE() << "no exception";
  throw std::runtime_error("no exception");
}

TEST(ChatSyntax, ErrorsCarryLineAndColumn) {
  auto e = expect_throw<TemplateSyntaxError>([] { Template::parse("line one\n{% if x %}\n  {% endfor %}"); });
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 6);  // the keyword 'endfor'
  e = expect_throw<TemplateSyntaxError>([] { Template::parse("ab\ncd {{ x"); });
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.column(), 4);
  e = expect_throw<TemplateSyntaxError>([] { Template::parse("{{ 'unterminated }}"); });
  EXPECT_EQ(e.line(), 1);
  EXPECT_EQ(e.column(), 4);
  e = expect_throw<TemplateSyntaxError>([] { Template::parse("{% for x in xs %}\n{{ x }}"); });
  EXPECT_EQ(e.line(), 2);
  EXPECT_NE(std::string(e.what()).find("endfor"), std::string::npos) << e.what();
  e = expect_throw<TemplateSyntaxError>([] { Template::parse("{{ 1 + }}"); });
  EXPECT_EQ(e.column(), 8);
  e = expect_throw<TemplateSyntaxError>([] { Template::parse("{# never closed"); });
  EXPECT_EQ(e.line(), 1);
  expect_throw<TemplateSyntaxError>([] { Template::parse("{% include 'other.j2' %}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{% extends 'base' %}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{% break %}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{{ a ] }}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{{ 99999999999999999999999 }}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{% raw %}never ends"); });
}

TEST(ChatSyntax, DeepNestingIsRefusedNotCrashing) {
  expect_throw<TemplateSyntaxError>([] { Template::parse("{{ " + std::string(100000, '(') + "1" + "}}"); });
  expect_throw<TemplateSyntaxError>([] { Template::parse("{{ " + std::string(100000, '[') + "}}"); });
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  expect_throw<TemplateSyntaxError>([&] { Template::parse(chain + " }}"); });
  std::string filters = "{{ x";
  for (int i = 0; i < 100000; ++i) filters += "|string";
  expect_throw<TemplateSyntaxError>([&] { Template::parse(filters + " }}"); });
  std::string attrs = "{{ x";
  for (int i = 0; i < 100000; ++i) attrs += ".a";
  expect_throw<TemplateSyntaxError>([&] { Template::parse(attrs + " }}"); });
  std::string ifs;
  for (int i = 0; i < 100000; ++i) ifs += "{% if true %}";
  expect_throw<TemplateSyntaxError>([&] { Template::parse(ifs); });
  std::string nots = "{{ ";
  for (int i = 0; i < 100000; ++i) nots += "not ";
  expect_throw<TemplateSyntaxError>([&] { Template::parse(nots + "x }}"); });
}

TEST(ChatSandbox, LoopIterationLimit) {
  RenderOptions small;
  small.limits.max_loop_iterations = 20000;
  auto e = expect_throw<TemplateLimitError>(
      [&] { render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", {}, small); });
  EXPECT_EQ(e.line(), 1);
  small.limits.max_loop_iterations = 50;
  expect_throw<TemplateLimitError>([&] { render("{% for i in range(10) %}{% for j in range(10) %}{% endfor %}{% endfor %}", {}, small); });
  EXPECT_EQ(render("{% for i in range(6) %}{% for j in range(6) %}{% endfor %}{% endfor %}ok", {}, small), "ok");
  expect_throw<TemplateLimitError>([] { render("{{ range(10**12)|length }}"); });
}

// The default limits stop a nested loop of 10^10 iterations.
TEST(ChatSandboxSlow, DefaultLoopLimit) {
  expect_throw<TemplateLimitError>(
      [] { render("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"); });
}

TEST(ChatSandbox, RecursionLimit) {
  auto e = expect_throw<TemplateLimitError>([] { render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}"); });
  EXPECT_GT(e.line(), 0);
  expect_throw<TemplateLimitError>(
      [] { render("{% macro f() %}{% call f() %}x{% endcall %}{% endmacro %}{{ f() }}"); });
}

TEST(ChatSandbox, OutputAndStringLimits) {
  RenderOptions small;
  small.limits.max_output_bytes = 1000;
  small.limits.max_string_bytes = 1000;
  expect_throw<TemplateLimitError>([&] { render("{% for i in range(2000) %}x{% endfor %}", {}, small); });
  expect_throw<TemplateLimitError>([&] { render("{{ 'x' * 5000 }}", {}, small); });
  expect_throw<TemplateLimitError>([&] { render("{{ [1] * 5000 }}", {}, small); });
  expect_throw<TemplateLimitError>([] { render("{{ 'ab' * 1000000000000 }}"); });
  expect_throw<TemplateLimitError>([] {
    render("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}");
  });
  expect_throw<TemplateLimitError>([] {
    render("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}");
  });
  expect_throw<TemplateLimitError>([&] { render("{% filter upper %}{% for i in range(2000) %}x{% endfor %}{% endfilter %}", {}, small); });
}

// Issue 24: limits counted list items, not bytes (a list item is a whole
// Value), and printing or serializing a list of lists sharing their items
// built the whole text before checking it.
TEST(ChatSandbox, ListsCountInBytesAndOutputIsCheckedAsItGrows) {
  expect_throw<TemplateLimitError>([] { render("{% set x = [1] * 16000000 %}"); });
  expect_throw<TemplateLimitError>([] {
    render("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}");
  });
  expect_throw<TemplateLimitError>([] {
    render("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% do ns.l.extend(ns.l) %}{% endfor %}");
  });
  expect_throw<TemplateLimitError>([] { render("{{ ([[[1] * 4000] * 4000] * 4000) | tojson }}"); });
  expect_throw<TemplateLimitError>([] { render("{{ [[[1] * 4000] * 4000] * 4000 }}"); });
  expect_throw<TemplateLimitError>([] { render("{{ ([[[1] * 4000] * 4000] * 4000) ~ 'x' }}"); });
  expect_throw<TemplateLimitError>([] { render("{{ ([[[1] * 4000] * 4000] * 4000) | join(',') }}"); });
  // Every string built counts, even when each is dropped at once.
  RenderOptions small;
  small.limits.max_alloc_bytes = 1u << 20;
  expect_throw<TemplateLimitError>([&] {
    render("{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% do ns.l.append('x' * 100000) %}{% endfor %}", {},
           small);
  });
  EXPECT_EQ(render("{{ ([1] * 3) | tojson }}"), "[1, 1, 1]");
}

TEST(ChatSandbox, TimeAndCancellation) {
  RenderOptions quick;
  quick.limits.max_seconds = 1e-6;
  expect_throw<TemplateLimitError>([&] { render("{% for i in range(900000) %}{{ i }}{% endfor %}", {}, quick); });
  std::atomic<bool> gone{true};
  RenderOptions cancel;
  cancel.limits.cancel = &gone;
  expect_throw<Cancelled>([&] { render("{% for i in range(900000) %}{{ i }}{% endfor %}", {}, cancel); });
  gone = false;
  EXPECT_EQ(render("{{ 1 + 1 }}", {}, cancel), "2");
}

TEST(ChatSandbox, WorkLimit) {
  RenderOptions small;
  small.limits.max_work = 10000;
  expect_throw<TemplateLimitError>(
      [&] { render("{% for i in range(100) %}{% for j in range(100) %}{{ i * j }}{% endfor %}{% endfor %}", {}, small); });
}

TEST(ChatSandbox, SelfReferenceIsRefused) {
  expect_throw<TemplateLimitError>([] { render("{% set l = [] %}{% do l.append(l) %}{{ l }}"); });
  expect_throw<TemplateLimitError>([] { render("{% set l = [] %}{% do l.append(l) %}{{ l|tojson }}"); });
  expect_throw<TemplateLimitError>([] {
    render("{% set a = [] %}{% set b = [] %}{% do a.append(a) %}{% do b.append(b) %}{{ a == b }}");
  });
  // A namespace holding itself is legal (and freed after the render).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ 'ok' if ns.me.me is defined }}"), "ok");
  // A loop object kept past its loop and fed to itself is no leak either.
  EXPECT_EQ(render("{% set ns = namespace() %}{% for x in [1] %}{% set ns.l = loop %}{{ loop.changed(loop) }}"
                   "{% endfor %}{{ ns.l.index }}"),
            "True1");
}

TEST(ChatSandbox, NoHostAttributes) {
  // Underscore attributes are never resolved: they are undefined, so using
  // them further is an error and printing them prints nothing.
  EXPECT_EQ(render("[{{ x.__class__ }}][{{ ''.__class__ }}][{{ range.__globals__ }}]", {{"x", {1}}}), "[][][]");
  expect_throw<TemplateRenderError>([] { render("{{ ''.__class__.__mro__ }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ x.__init__.__globals__ }}", {{"x", 1}}); });
  expect_throw<TemplateRenderError>([] { render("{{ cycler.__init__ }}{{ lipsum() }}"); });
}

TEST(ChatSandbox, RaiseExceptionIsTyped) {
  auto e = expect_throw<TemplateRaisedError>([] { render("a\n{{ raise_exception('roles must alternate') }}"); });
  EXPECT_EQ(e.message(), "roles must alternate");
  EXPECT_EQ(e.line(), 2);
}

TEST(ChatSandbox, RenderErrorsAreTyped) {
  expect_throw<TemplateRenderError>([] { render("{{ missing.attr }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ 1 + 'a' }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ 9223372036854775807 + 1 }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ (-9223372036854775807 - 1) // -1 }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ 2 ** 64 }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ x|nosuch }}"); });
  expect_throw<TemplateRenderError>([] { render("{{ x is nosuch }}"); });
  expect_throw<InvalidArgument>([] { render("{{ 1 }}", Json::array()); });
}

TEST(ChatTemplates, LookupByNameAndFile) {
  for (const auto& name : builtin_template_names()) {
    ASSERT_NE(builtin_template(name), nullptr) << name;
    EXPECT_EQ(load_chat_template(name), builtin_template(name));
  }
  EXPECT_EQ(builtin_template("no-such-template"), nullptr);
  expect_throw<InvalidArgument>([] { load_chat_template("/no/such/file.jinja"); });
  const std::string path = ::testing::TempDir() + "ferrite_chat_template.jinja";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("{{ messages[0].content }}!", f);
    std::fclose(f);
  }
  const std::string src = load_chat_template(path);
  EXPECT_EQ(src, "{{ messages[0].content }}!");
  ChatOptions opt;
  EXPECT_EQ(apply_chat_template(src, Json::parse(R"([{"role": "user", "content": "hi"}])"), opt), "hi!");
  std::remove(path.c_str());
}

TEST(ChatTemplates, LoadsTokenizerConfigJson) {
  FERRITE_SHARED_FILE(cfg, "templates/llama3.tokenizer_config.json");
  const std::string src = load_chat_template(cfg.string());
  EXPECT_EQ(src, Json::parse(::ferrite::test::read_file(cfg))["chat_template"].get<std::string>());
}

TEST(ChatTemplates, ContextHasHuggingFaceVariables) {
  ChatOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.add_generation_prompt = true;
  opt.extra = Json{{"enable_thinking", false}};
  const Json msgs = Json::parse(R"([{"role": "user", "content": "x"}])");
  // tools and documents are defined and None when not given, as in transformers.
  EXPECT_EQ(apply_chat_template("{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ tools is none }}|"
                                "{{ documents is none }}|{{ enable_thinking }}|{{ messages|length }}",
                                msgs, opt),
            "<s>|</s>|True|True|True|False|1");
  expect_throw<InvalidArgument>([&] { apply_chat_template("x", Json::object(), opt); });
}

}  // namespace
}  // namespace ferrite::chat
