// JSON schema -> GBNF, the subset llama.cpp's json-schema-to-grammar covers:
// types object/array/string/number/integer/boolean/null (and lists of types),
// properties with required and optional properties kept in their order,
// additionalProperties (false/true/schema), items, prefixItems,
// minItems/maxItems, enum, const, anyOf/oneOf, allOf (objects merged), $ref
// to #/definitions, #/$defs or any local JSON pointer, string formats
// date/time/date-time/uuid, pattern (a regex subset), minLength/maxLength,
// and minimum/maximum/exclusiveMinimum/exclusiveMaximum for integers.
//
// The generated grammar matches JSON text with bounded whitespace (a space or
// a newline and up to 20 indentation characters between tokens). As in
// llama.cpp, an object schema with properties and no additionalProperties
// admits only the listed properties.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferrite::grammar {

// Bounds on one conversion, checked as it goes (before the work is done):
// schemas can ask for work exponential in their size (nested lists of
// types, allOf over $ref chains). Past a bound the conversion throws
// SchemaLimitError; when `cancel` becomes true it throws ferrite::Cancelled.
struct SchemaLimits {
  size_t max_steps = 200'000;              // schema nodes visited or copied, $refs followed
  size_t max_grammar_bytes = 4u << 20;     // GBNF text produced
  double max_seconds = 5.0;                // wall time (<= 0: none)
  const std::atomic<bool>* cancel = nullptr;
};

class SchemaLimitError : public InvalidArgument {
 public:
  explicit SchemaLimitError(const std::string& what) : InvalidArgument(what) {}
};

// Throws InvalidArgument for schemas outside the subset (with the path of
// the offending part) and for unresolvable $ref. Properties keep the order of
// the ordered_json; a plain json (sorted keys) orders them by name.
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const SchemaLimits& limits = {});
std::string json_schema_to_gbnf(const nlohmann::json& schema, const SchemaLimits& limits = {});
// Parses the schema text first (InvalidArgument when it is not JSON).
std::string json_schema_to_gbnf(std::string_view schema_text, const SchemaLimits& limits = {});

// The grammar of response_format json_object: any JSON object (or any JSON
// value when object_only is false), with the same whitespace rule.
std::string json_any_gbnf(bool object_only = true);

// Internal pieces, exposed for tests.
// GBNF expression matching the decimal integers in [lo, hi]; either bound may
// be absent. Throws InvalidArgument when the range is empty.
std::string integer_range_gbnf(const int64_t* lo, const int64_t* hi);
// GBNF expression matching the JSON-encoded contents (between the quotes) of
// the strings that the regex `pattern` matches (searched, unless anchored by
// ^ and $). `char_rule` names the rule for any one JSON string character.
std::string regex_to_gbnf(std::string_view pattern, const std::string& char_rule);

}  // namespace ferrite::grammar
