// JSON files of a Hugging Face checkpoint (config.json, tokenizer.json, ...)
// read with limits: a size cap, a nesting cap, and typed accessors whose
// errors name the file and the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ferrite::convert {

using Json = nlohmann::json;

// Deeper nesting than this is refused (real files nest a few levels).
constexpr int kMaxJsonDepth = 64;

// Parses `text`; `name` appears in errors. Throws FormatError for malformed
// JSON or nesting deeper than kMaxJsonDepth.
Json parse_json(std::string_view text, const std::string& name);

// Reads and parses a file of at most `max_bytes`. Throws IoError when it
// cannot be read (or is larger), FormatError when it is not JSON.
Json read_json_file(const std::string& path, uint64_t max_bytes);

// Typed members of an object; `where` names the object in errors
// ("config.json"). Absent or null members give nullopt; a member of another
// type throws ModelError.
std::optional<int64_t> json_int(const Json& obj, std::string_view key, const std::string& where);
std::optional<double> json_number(const Json& obj, std::string_view key, const std::string& where);
std::optional<bool> json_bool(const Json& obj, std::string_view key, const std::string& where);
std::optional<std::string> json_string(const Json& obj, std::string_view key, const std::string& where);
// The member when it is an object (nullptr when absent or null).
const Json* json_object(const Json& obj, std::string_view key, const std::string& where);

}  // namespace ferrite::convert
