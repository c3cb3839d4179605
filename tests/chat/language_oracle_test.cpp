// Language features of the Jinja interpreter, each compared with Python's
// jinja2 (tests/chat/jinja_oracle.py) on the same template and data.
#include <gtest/gtest.h>

#include "oracle.h"

namespace ferrite::chat::test {
namespace {

const Json& data() {
  static const Json d = Json::parse(R"({
    "s": "  Hello, World!  ", "n": 7, "f": 2.5, "neg": -3, "t": true, "nil": null, "empty": "",
    "xs": [3, 1, 2], "words": ["b", "A", "c", "a"], "nested": [[1, 2], [3, 4]],
    "d": {"b": 2, "a": 1, "C": 3},
    "users": [{"name": "ann", "age": 31, "admin": true}, {"name": "bob", "age": 25, "admin": false},
              {"name": "cy", "age": 40}],
    "text": "line one\nline two\n\nline four",
    "uni": "héllo wörld ✓ 😀", "quote": "it's \"quoted\" \\ back",
    "obj": {"x": [1, {"y": null}], "z": "ü", "w": 1.0, "v": 1e20, "u": 0.0001}
  })");
  return d;
}

std::vector<OracleCase> snippets() {
  const std::vector<std::pair<const char*, const char*>> src = {
      // Output, literals and operators.
      {"literals", "{{ 1 }} {{ 1.5 }} {{ 'a' \"b\" }} {{ [1, 'x', none, true, 2.0] }} {{ {'k': 'v', 1: [2]} }} {{ (1, 2) }}"},
      {"arith", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 * 2 }} {{ 10 / 4 * 2 }}"},
      {"precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ not true or true }} {{ 1 ~ 2 + 3 }} {{ -n|abs }}"},
      {"strings", "{{ 'ab' * 3 }} {{ 'a' + 'b' }} {{ n ~ 'x' ~ nil ~ t }} {{ 'x' ~ undefined_thing ~ 'y' }} {{ '%s-%d' % ('a', 3) }}"},
      {"compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 1 == 1.0 }} {{ 'a' != 'b' }} {{ 'b' >= 'a' }} {{ [1,2] < [1,3] }} {{ 2 in xs }} {{ 5 not in xs }} {{ 'ell' in s }} {{ 'a' in d }}"},
      {"logic", "{{ 0 or 'x' }} {{ 1 and 'y' }} {{ '' or [] or 'z' }} {{ nil and 1 }} {{ not empty }} {{ none is none }}"},
      {"ternary", "{{ 'yes' if t else 'no' }} {{ 'yes' if nil else 'no' }} [{{ 'only' if false }}] {{ 1 if n > 5 else 2 if n > 3 else 3 }}"},
      {"float_repr", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1e15 }} {{ 1.0 }} {{ 123456789.123 }} {{ 0.0001 }} {{ 0.00001 }} {{ 2.5e-7 }} {{ 1/3 }} {{ 1e100 }} {{ -0.5 }}"},
      {"subscript", "{{ xs[0] }} {{ xs[-1] }} {{ d['a'] }} {{ d.b }} {{ users[1].name }} {{ nested[1][0] }} {{ xs.1 }} [{{ xs[10] }}] [{{ d.missing }}] {{ 'abc'[1] }}"},
      {"slices", "{{ xs[1:] }} {{ xs[:2] }} {{ xs[::-1] }} {{ xs[-2:] }} {{ 'hello'[1:4] }} {{ 'hello'[::-1] }} {{ uni[1:5] }} {{ xs[5:] }} {{ xs[::2] }} {{ xs[2:0:-1] }}"},
      // Statements.
      {"if_elif", "{% for v in [1, 5, 9] %}{% if v < 3 %}low{% elif v < 7 %}mid{% else %}high{% endif %} {% endfor %}"},
      {"for_loop_vars", "{% for x in xs %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}|{% endfor %}"},
      {"for_prev_next", "{% for x in xs %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{{ loop.cycle('a', 'b') }}{% endfor %}"},
      {"for_else", "{% for x in [] %}{{ x }}{% else %}none{% endfor %} {% for x in xs if x > 1 %}{{ x }}:{{ loop.index }}:{{ loop.length }} {% endfor %}"},
      {"for_dict", "{% for k in d %}{{ k }}{% endfor %} {% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %} {% for a, b in nested %}{{ a + b }}{% endfor %}"},
      {"for_string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}"},
      {"loop_controls", "{% for x in range(10) %}{% if x is odd %}{% continue %}{% endif %}{% if x > 6 %}{% break %}{% endif %}{{ x }}{% endfor %}"},
      {"nested_loops", "{% for row in nested %}{% for c in row %}{{ loop.index }}{{ c }}{% endfor %};{{ loop.index }}{% endfor %}"},
      {"scoping", "{% set x = 1 %}{% for i in range(3) %}{{ x }}{% set x = i + 10 %}{{ x }};{% endfor %}{{ x }}{% if true %}{% set x = 5 %}{% endif %}{{ x }}"},
      {"namespace", "{% set ns = namespace(total=0, names=[]) %}{% for u in users %}{% set ns.total = ns.total + u.age %}{% endfor %}{{ ns.total }} {{ ns.names }}"},
      {"set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c = 3, 4 %}{{ c }}"},
      {"set_block", "{% set block %}Hi {{ n }}!{% endset %}[{{ block }}]{% set up | upper %}shout{% endset %}{{ up }}"},
      {"macro", "{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', 'Hi') }} {{ greet('Cy', punct='?') }}"},
      {"macro_caller", "{% macro box(title) %}<{{ title }}:{{ caller() }}>{% endmacro %}{% call box('t') %}inner {{ n }}{% endcall %}"},
      {"macro_caller_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(item) each(xs) %}({{ item * 2 }}){% endcall %}"},
      {"macro_recursion", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1)|int }}{% endif %}{% endmacro %}{{ fact(6) }}"},
      {"filter_block", "{% filter upper %}hello {{ n }}{% endfilter %} {% filter replace('a', 'o') | title %}banana split{% endfilter %}"},
      {"raw", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}"},
      {"comment", "a{# a comment {{ x }} #}b\n  {# own line #}\nc"},
      {"with", "{% with a = 1, b = n %}{{ a + b }}{% endwith %}[{{ a }}]"},
      // Whitespace control.
      {"ws_trim_lstrip", "<ul>\n  {% for x in xs %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>\n"},
      {"ws_minus", "a   {%- if true -%}   b   {%- endif -%}   c\n{{- ' d ' -}}\n  e"},
      {"ws_plus", "  {%+ if true %}x{% endif +%}\ny\n  {{ n }}  \n{% if true %}  z{% endif %}"},
      {"ws_comment_trim", "line1\n    {# c #}\nline2\n{#- c -#}\n  line3"},
      {"ws_trailing_newline", "x\n"},
      {"ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc"},
      // Filters.
      {"filters_text", "[{{ s|trim }}] [{{ s|upper }}] [{{ s|lower }}] {{ 'hello wORLD-foo(bar)'|title }} {{ 'hELLO'|capitalize }} {{ 'xxyxx'|trim('x') }}"},
      {"filters_len", "{{ xs|length }} {{ d|length }} {{ uni|length }} {{ xs|count }} {{ nothing|length }} {{ xs|first }} {{ xs|last }} {{ 'abc'|first }}"},
      {"filters_join", "{{ xs|join(',') }} {{ words|join }} {{ users|join(', ', attribute='name') }} {{ [1, none, 'a']|join('-') }}"},
      {"filters_default", "{{ missing|default('dflt') }} {{ nil|default('dflt') }} {{ empty|default('dflt', true) }} {{ missing|d('x') }} {{ n|default(0) }}"},
      {"filters_replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ s|replace(' ', '') }}"},
      {"filters_convert", "{{ '42'|int }} {{ ' 7 '|int }} {{ '3.9'|int }} {{ 'x'|int }} {{ 'x'|int(5) }} {{ 3.99|int }} {{ '2.5'|float }} {{ 'a'|float }} {{ 4|float }} {{ 42|string }} {{ xs|string }} {{ 'ff'|int(base=16) }}"},
      {"filters_list", "{{ 'abc'|list }} {{ d|list }} {{ xs|reverse|list }} {{ 'abc'|reverse }} {{ xs|sort }} {{ xs|sort(reverse=true) }} {{ words|sort }} {{ words|sort(case_sensitive=true) }}"},
      {"filters_map", "{{ users|map(attribute='name')|list }} {{ users|map(attribute='admin', default='?')|list }} {{ words|map('upper')|join }} {{ ['1', '2']|map('int')|sum }}"},
      {"filters_select", "{{ xs|select('odd')|list }} {{ xs|reject('odd')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ users|selectattr('admin')|map(attribute='name')|list }} {{ users|rejectattr('admin')|map(attribute='name')|list }} {{ users|selectattr('age', 'gt', 30)|map(attribute='name')|join(',') }} {{ xs|select('equalto', 2)|list }} {{ users|selectattr('admin', 'defined')|list|length }}"},
      {"filters_items", "{{ d|items|list }} {{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value', reverse=true) }}"},
      {"filters_unique_minmax", "{{ [1, 2, 1, 3, 2]|unique|list }} {{ words|unique|list }} {{ xs|min }} {{ xs|max }} {{ words|max }} {{ users|max(attribute='age') }} {{ users|sort(attribute='age')|map(attribute='name')|join }}"},
      {"filters_numbers", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.567|round(2) }} {{ 2.1|round(method='ceil') }} {{ -3|abs }} {{ -2.5|abs }} {{ xs|sum }} {{ users|sum(attribute='age') }} {{ xs|sum(start=10) }}"},
      {"filters_misc", "{{ 'hi'|center(10) }}|{{ 'hi'|center(9) }}| {{ 'one two  three'|wordcount }} {{ xs|batch(2)|list }} {{ xs|batch(2, 0)|list }} {{ '<a&b>'|e }} {{ '<x>'|safe }}"},
      {"filters_indent", "{{ text|indent }}|{{ text|indent(2, true) }}|{{ text|indent(2, blank=true) }}|{{ text|indent('> ') }}"},
      {"tojson", "{{ obj|tojson }}\n{{ obj|tojson(indent=2) }}\n{{ uni|tojson }} {{ quote|tojson }} {{ [1, 2.0, true, none]|tojson }} {{ {}|tojson }} {{ []|tojson(indent=2) }} {{ d|tojson(sort_keys=true) }} {{ 'a\tb\u0001'|tojson }}"},
      // Tests.
      {"tests_types", "{{ n is number }} {{ f is number }} {{ t is number }} {{ n is integer }} {{ t is integer }} {{ f is float }} {{ s is string }} {{ xs is sequence }} {{ d is mapping }} {{ xs is mapping }} {{ s is iterable }} {{ n is iterable }} {{ t is boolean }} {{ nil is none }} {{ range is callable }}"},
      {"tests_values", "{{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ t is true }} {{ 1 is true }} {{ false is false }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 2 is in xs }} {{ 2 is eq 2 }} {{ 2 is ne 3 }} {{ x is not defined }} {{ n is defined }} {{ missing is undefined }} {{ 3 is gt 2 }} {{ 3 is sameas 3 }}"},
      // Methods.
      {"str_methods", "[{{ s.strip() }}] [{{ s.lstrip() }}] [{{ s.rstrip() }}] {{ 'xxhixx'.strip('x') }} {{ '\\n\\nhi\\n'.lstrip('\\n') }} {{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b '.rsplit() }}"},
      {"str_methods2", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'aXa'.replace('a', 'b') }} {{ 'Hi'.upper() }} {{ 'Hi'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.count('l') }} {{ '{} and {}'.format(1, 'b') }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{x}!'.format(x=3) }} {{ '-'.join(['a', 'b']) }} {{ text.splitlines() }} {{ 'hello'.capitalize() }} {{ 'hello'.rfind('l') }}"},
      {"dict_methods", "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 9) }} {{ d['items'] is callable }}"},
      {"builtins", "{{ range(5)|list }} {{ range(2, 5)|list }} {{ range(10, 0, -3)|list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }} {{ strftime_now('%Y-%m-%d %H:%M %B %b %d') }}"},
      {"cycler_joiner", "{% set c = cycler('a', 'b') %}{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner('|') %}{% for x in xs %}{{ j() }}{{ x }}{% endfor %}"},
      {"loop_changed", "{% for x in [1, 1, 2, 2, 3] %}{% if loop.changed(x) %}{{ x }}{% endif %}{% endfor %}"},
      // Undefined semantics and errors.
      {"undefined_print", "[{{ missing }}] [{{ d.missing }}] [{{ xs[99] }}] [{{ missing|upper }}] {{ missing is defined }} {% for x in missing %}x{% endfor %}[{{ missing|list }}]"},
      {"err_undefined_attr", "{{ missing.attr }}"},
      {"err_undefined_add", "{{ 'a' + missing }}"},
      {"err_type_add", "{{ 'a' + 1 }}"},
      {"err_raise", "{{ raise_exception('bad conversation') }}"},
      {"err_div_zero", "{{ 1 // 0 }}"},
      {"err_unknown_filter", "{{ 1|nosuchfilter }}"},
      {"err_in_none", "{{ 'a' in nil }}"},
      {"err_call_undefined", "{{ nosuchfn() }}"},
      {"err_syntax", "{% if %}"},
      {"err_unclosed", "{% for x in xs %}"},
      {"unsafe_attr", "[{{ xs.__class__ }}] [{{ d.__len__ }}] [{{ ''.__class__ }}]"},
      {"none_attr", "[{{ nil.foo }}] [{{ n.real_thing }}]"},
  };
  std::vector<OracleCase> cases;
  for (const auto& [name, source] : src) cases.push_back({name, source, data()});
  return cases;
}

TEST(ChatLanguage, MatchesJinja2) {
  if (expect_matches_oracle(snippets()) == 0) GTEST_SKIP() << "jinja2 oracle unavailable";
}

}  // namespace
}  // namespace ferrite::chat::test
