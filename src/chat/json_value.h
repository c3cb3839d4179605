// Conversion between JSON (nlohmann::ordered_json, which keeps key order as
// Python's json.loads does) and template values, and Python's json.dumps
// as Hugging Face's `tojson` filter calls it (ensure_ascii=False).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "chat/value.h"

namespace ferrite::chat {

using Json = nlohmann::ordered_json;

Value from_json(const Json& j);

struct JsonDumpOptions {
  std::optional<std::string> indent;  // nullopt: one line
  std::string item_separator = ", ";  // Python's default; "," when indenting
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
  size_t max_bytes = SIZE_MAX;        // longer output: TemplateLimitError, raised as it grows
};

// json.dumps(value, ...). Throws TemplateRenderError for values JSON cannot
// hold (undefined, functions) and TemplateLimitError past kMaxValueDepth.
std::string dump_json(const Value& v, const JsonDumpOptions& options);

}  // namespace ferrite::chat
