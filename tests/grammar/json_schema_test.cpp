// JSON schema -> grammar. For a set of schemas and candidate texts (valid and
// invalid, written in the whitespace style the grammar admits), the grammar
// accepts exactly the texts that Python's json + jsonschema accept. The
// candidates avoid the places where the grammar is deliberately stricter
// than JSON Schema, as llama.cpp's is: properties in schema order, no
// unlisted properties unless additionalProperties says so, prefixItems as a
// fixed tuple, additional properties not checked against listed names. Integer
// ranges are checked against their definition; string formats against hand-
// written cases.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "python_oracle.h"
#include "full_match.h"

namespace ferrite::grammar {
namespace {

using nlohmann::json;

struct Case {
  const char* schema;
  std::vector<std::string> instances;
};

const std::vector<Case>& schema_cases() {
  static const std::vector<Case> cases = {
      {R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
           "required": ["name", "age"], "additionalProperties": false})",
       {R"({"name": "Ann", "age": 31})", R"({"name":"Bo","age":-2})",
        R"({"name": "Ann"})", R"({"name": "Ann", "age": 31, "x": 1})", R"({"name": 5, "age": 31})",
        R"({"name": "Ann", "age": 3.5})", "{\n  \"name\": \"A\\\"n\",\n  \"age\": 0\n}", R"([])"}},
      {R"({"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"},
           "c": {"type": "number"}}, "additionalProperties": false})",
       {R"({})", R"({"a": true})", R"({"b": null})", R"({"c": -1.5e3})", R"({"a": false, "c": 2})",
        R"({"a": true, "b": null, "c": 0.25})", R"({"a": 1})",
        R"({"d": 1})", R"({"a": true,})"}},
      {R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
           "additionalProperties": {"type": "string"}})",
       {R"({"id": 1})", R"({"id": 1, "x": "y", "z": ""})", R"({"id": 1, "x": 2})", R"({"x": "y"})"}},
      {R"({"type": "object", "properties": {"id": {"type": "integer"}}, "additionalProperties": true})",
       {R"({})", R"({"id": 7, "tags": [1, "a", {"k": null}]})", R"({"id": 7, "x"})", R"({"q": [1, 2]})"}},
      {R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})",
       {"[]", "[1]", "[1, 2]", "[1,2,3,4]", "[1, 2, 3, 4, 5]", R"([1, "2"])", "[1, 2, 3]"}},
      {R"({"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 3}})",
       {"[]", R"(["ab", "abc"])", R"(["a"])", R"(["abcd"])", R"(["\u00e9\n"])", R"(["é€"])"}},
      {R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}, {"type": "boolean"}]})",
       {R"(["a", 1, true])", R"([1, "a", true])", R"(["a", 1, false])"}},
      {R"({"enum": ["red", "green", 42, null, {"k": [1]}]})",
       {R"("red")", R"("green")", "42", "null", R"({"k": [1]})", R"("blue")", "43", R"({"k": [2]})"}},
      {R"({"const": {"version": 2, "tag": "v\"2"}})",
       {R"({"version": 2, "tag": "v\"2"})", R"({"version": 3, "tag": "v\"2"})"}},
      {R"({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "boolean"}}]})",
       {"3", "[true, false]", "[]", "\"3\"", "[1]"}},
      {R"({"oneOf": [{"type": "string", "pattern": "^a"}, {"type": "null"}]})",
       {R"("abc")", "null", R"("bac")", "0"}},
      {R"({"type": ["string", "null"]})", {R"("x")", "null", "1", "true"}},
      {R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "string"}}, "required": ["b"]}]})",
       {R"({"a": 1, "b": "x"})", R"({"a": 1})", R"({"b": "x"})", R"({"a": "1", "b": "x"})"}},
      {R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
            "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
            "required": ["value", "next"], "additionalProperties": false}},
           "$ref": "#/$defs/node"})",
       {R"({"value": 1, "next": null})", R"({"value": 1, "next": {"value": 2, "next": null}})",
        R"({"value": 1, "next": {"value": 2}})", R"({"value": 1})"}},
      {R"({"definitions": {"pos": {"type": "integer", "minimum": 1}},
           "type": "array", "items": {"$ref": "#/definitions/pos"}})",
       {"[1, 2, 300]", "[0]", "[-1]", "[]"}},
      {R"({"type": "integer", "minimum": -15, "maximum": 120})",
       {"-15", "-16", "0", "120", "121", "99", "-9", "7", "1000", "-100"}},
      {R"({"type": "integer", "exclusiveMinimum": 10})", {"10", "11", "9", "100000", "-11"}},
      {R"({"type": "integer", "exclusiveMaximum": -3})", {"-3", "-4", "0", "-1000"}},
      {R"({"type": "string", "pattern": "^[a-z]{2,3}-[0-9]+$"})",
       {R"("ab-1")", R"("abc-123")", R"("a-1")", R"("abcd-1")", R"("ab-")", R"("AB-1")"}},
      {R"({"type": "string", "pattern": "^(\\d{3}\\.){2}x|y+\\\\$"})",
       {R"("123.456.x")", R"("yy\\")", R"("12.456.x")", R"("y")"}},
      {R"({"type": "string", "pattern": "b[^0-9\"]c"})",
       {R"("abxc")", R"("b c!")", R"("abc")", R"("b1c")", R"("b\"c")"}},
      {R"({"type": "string", "pattern": "^say \"(hi|yo)\"\\s?$"})",
       {R"("say \"hi\"")", R"("say \"yo\" ")", R"("say \"hey\"")", R"("say hi")"}},
      {R"({"type": "string", "minLength": 1, "maxLength": 2})", {R"("")", R"("a")", R"("ab")", R"("abc")"}},
      {R"({})", {"1", R"({"a": [true, null]})", R"("s")", "[]"}},
      {R"({"type": "object"})", {R"({})", R"({"a": 1})", "[]", "1"}},
  };
  return cases;
}

TEST(GrammarJsonSchema, AgreesWithPythonJsonschema) {
  json batch = json::array();
  for (const Case& c : schema_cases()) batch.push_back({{"schema", json::parse(c.schema)}, {"instances", c.instances}});
  const auto expected = test::python_validate(batch);
  if (!expected) return;
  ASSERT_EQ(expected->size(), schema_cases().size());
  size_t n_valid = 0, n_invalid = 0;
  for (size_t i = 0; i < schema_cases().size(); ++i) {
    const Case& c = schema_cases()[i];
    const std::string gbnf = json_schema_to_gbnf(std::string_view(c.schema));
    const Grammar g = Grammar::parse(gbnf);
    for (size_t j = 0; j < c.instances.size(); ++j) {
      const bool want = (*expected)[i][j];
      (want ? n_valid : n_invalid)++;
      EXPECT_EQ(full_match(g, c.instances[j]), want)
          << "schema " << c.schema << "\ninstance " << c.instances[j] << "\ngrammar:\n" << gbnf;
    }
  }
  // The candidates exercise both outcomes.
  EXPECT_GT(n_valid, 40u);
  EXPECT_GT(n_invalid, 40u);
}

TEST(GrammarJsonSchema, IntegerRangesMatchTheirDefinition) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 0}, {0, 9}, {3, 7}, {5, 123}, {-123, -5}, {-1, 1}, {-250, 1032}, {99, 1000}, {10, 19}, {-7, 0}};
  for (const auto& [lo, hi] : ranges) {
    const Grammar g = Grammar::parse("root ::= " + integer_range_gbnf(&lo, &hi));
    for (int64_t v = -1500; v <= 1500; ++v) {
      ASSERT_EQ(full_match(g, std::to_string(v)), lo <= v && v <= hi) << v << " in [" << lo << "," << hi << "]";
    }
    EXPECT_FALSE(full_match(g, "-0"));
    EXPECT_FALSE(full_match(g, "007"));
  }
  const int64_t bound = 42;
  const Grammar at_least = Grammar::parse("root ::= " + integer_range_gbnf(&bound, nullptr));
  const Grammar at_most = Grammar::parse("root ::= " + integer_range_gbnf(nullptr, &bound));
  for (int64_t v = -1500; v <= 1500; ++v) {
    ASSERT_EQ(full_match(at_least, std::to_string(v)), v >= bound) << v;
    ASSERT_EQ(full_match(at_most, std::to_string(v)), v <= bound) << v;
  }
  EXPECT_TRUE(full_match(at_least, "123456789012"));
  EXPECT_TRUE(full_match(at_most, "-123456789012"));
  const int64_t lo = 5, hi = 4;
  EXPECT_THROW(integer_range_gbnf(&lo, &hi), InvalidArgument);
}

TEST(GrammarJsonSchema, StringFormats) {
  struct FormatCase {
    const char* format;
    std::vector<const char*> good, bad;
  };
  const std::vector<FormatCase> cases = {
      {"date", {"2024-02-29", "1999-12-31"}, {"2024-13-01", "2024-1-01", "2024-00-10", "24-01-01", "2024-01-32"}},
      {"time", {"23:59:59Z", "00:00:00.123+05:30", "12:30:00-08:00"}, {"24:00:00Z", "12:60:00Z", "12:00:00", "1:00:00Z"}},
      {"date-time", {"2024-02-29T23:59:59Z", "2000-01-01T00:00:00.000+01:00"}, {"2024-02-29 23:59:59Z", "2024-02-29T23:59Z"}},
      {"uuid", {"123e4567-e89b-12d3-a456-426614174000", "ABCDEF01-2345-6789-abcd-ef0123456789"},
       {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400g", "123e4567-e89b-12d3-a456-4266141740"}},
  };
  for (const auto& c : cases) {
    const Grammar g = Grammar::parse(json_schema_to_gbnf(json{{"type", "string"}, {"format", c.format}}));
    for (const char* s : c.good) EXPECT_TRUE(full_match(g, std::string("\"") + s + "\"")) << c.format << " " << s;
    for (const char* s : c.bad) EXPECT_FALSE(full_match(g, std::string("\"") + s + "\"")) << c.format << " " << s;
  }
}

TEST(GrammarJsonSchema, OptionalPropertiesKeepTheirOrder) {
  const Grammar g = Grammar::parse(json_schema_to_gbnf(std::string_view(
      R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
          "c": {"type": "integer"}}, "required": ["b"]})")));
  // Required first, then the optional ones in order, any subset.
  for (const char* ok : {R"({"b": 1})", R"({"b": 1, "a": 2})", R"({"b": 1, "c": 3})", R"({"b": 1, "a": 2, "c": 3})"}) {
    EXPECT_TRUE(full_match(g, ok)) << ok;
  }
  for (const char* bad : {R"({"a": 2, "b": 1})", R"({"b": 1, "c": 3, "a": 2})", R"({"b": 1, "d": 3})", "{}"}) {
    EXPECT_FALSE(full_match(g, bad)) << bad;
  }
}

TEST(GrammarJsonSchema, JsonObjectGrammar) {
  const Grammar obj = Grammar::parse(json_any_gbnf(true));
  const Grammar any = Grammar::parse(json_any_gbnf(false));
  EXPECT_TRUE(full_match(obj, R"({"a": [1, {"b": null}], "c": "d"})"));
  EXPECT_FALSE(full_match(obj, "[1]"));
  EXPECT_TRUE(full_match(any, "[1]"));
  EXPECT_TRUE(full_match(any, "-0.5e-7"));
  EXPECT_FALSE(full_match(any, "{'a': 1}"));
}

TEST(GrammarJsonSchema, ClearErrorsForUnsupportedSchemas) {
  for (const char* bad : {
           "not json",
           R"({"$ref": "#/definitions/missing"})",
           R"({"$ref": "http://example.com/schema.json"})",
           R"({"type": "string", "pattern": "^(?=a)b$"})",
           R"({"type": "string", "pattern": "(a)\\1"})",
           R"({"type": "string", "pattern": "a^b"})",
           R"({"type": "integer", "minimum": 5, "maximum": 4})",
           R"({"type": "array", "minItems": 3, "maxItems": 2})",
           R"({"type": "tuple"})",
           R"({"enum": []})",
           R"(false)",
       }) {
    EXPECT_THROW(json_schema_to_gbnf(std::string_view(bad)), InvalidArgument) << bad;
  }
}

// A schema of linear size whose nested lists of types make every level
// cost the ones below four times over (issue 24: k = 16, 1.2 KB, held a core
// at 100%).
nlohmann::ordered_json nested_types(int k) {
  nlohmann::ordered_json s = {{"type", "string"}};
  for (int i = 0; i < k; ++i) s = {{"type", {"array", "array", "array", "null"}}, {"items", s}};
  return s;
}

// allOf over $refs, each level twice: 2^n merges of copied schemas.
nlohmann::ordered_json all_of_chain(int n) {
  nlohmann::ordered_json defs = nlohmann::ordered_json::object();
  for (int i = 0; i < n; ++i) {
    std::string next = "#/$defs/d";  // appended, not "+": GCC 12 warns (-Wrestrict) on that
    next += std::to_string(i + 1);
    defs[std::string(1, 'd').append(std::to_string(i))] = {{"anyOf", {{{"allOf", {{{"$ref", next}}}}}, {{"allOf", {{{"$ref", next}}, {{"type", "object"}}}}}}}};
  }
  defs[std::string(1, 'd').append(std::to_string(n))] = {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}};
  return {{"$ref", "#/$defs/d0"}, {"$defs", defs}};
}

TEST(GrammarJsonSchemaLimits, ExponentialSchemasAreRefusedWhileConverting) {
  EXPECT_THROW(json_schema_to_gbnf(nested_types(16)), SchemaLimitError);
  EXPECT_THROW(json_schema_to_gbnf(all_of_chain(24)), SchemaLimitError);
  // The same shapes, small, convert and match.
  const Grammar g = Grammar::parse(json_schema_to_gbnf(nested_types(2)));
  EXPECT_TRUE(full_match(g, R"([null, ["x"]])"));
  EXPECT_FALSE(full_match(g, R"([["x", 1]])"));
  const Grammar chain = Grammar::parse(json_schema_to_gbnf(all_of_chain(3)));
  EXPECT_TRUE(full_match(chain, R"({"x": 5})"));
}

TEST(GrammarJsonSchemaLimits, GrammarBytesAreCheckedBeforeTheyExist) {
  SchemaLimits small;
  small.max_grammar_bytes = 4096;
  nlohmann::ordered_json big_enum = nlohmann::ordered_json::array();
  for (int i = 0; i < 2000; ++i) big_enum.push_back("value number " + std::to_string(i));
  EXPECT_THROW(json_schema_to_gbnf(nlohmann::ordered_json{{"enum", big_enum}}, small), SchemaLimitError);
  EXPECT_NO_THROW(json_schema_to_gbnf(nlohmann::ordered_json{{"enum", {"a", "b"}}}, small));
  SchemaLimits few;
  few.max_steps = 10;
  EXPECT_THROW(json_schema_to_gbnf(nested_types(3), few), SchemaLimitError);
}

TEST(GrammarJsonSchemaLimits, CancelFlagStopsTheConversion) {
  std::atomic<bool> gone{true};
  SchemaLimits limits;
  limits.cancel = &gone;
  limits.max_steps = SIZE_MAX;
  EXPECT_THROW(json_schema_to_gbnf(nested_types(16), limits), Cancelled);
  gone = false;
  EXPECT_NO_THROW(json_schema_to_gbnf(nested_types(2), limits));
}

}  // namespace
}  // namespace ferrite::grammar
