#include "convert/json_file.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ferrite::convert {
namespace {

const Json* member(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

[[noreturn]] void wrong_type(std::string_view key, const std::string& where, const char* want, const Json& v) {
  throw ModelError(where + ": \"" + std::string(key) + "\" must be " + want + ", not " + v.type_name());
}

}  // namespace

Json parse_json(std::string_view text, const std::string& name) {
  const auto depth_limit = [&](int depth, Json::parse_event_t event, Json&) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw FormatError(name, 0, "JSON", "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), depth_limit);
  } catch (const Json::parse_error& e) {
    throw FormatError(name, e.byte, "JSON", e.what());
  } catch (const Json::exception& e) {  // out_of_range: a number too large for a double
    throw FormatError(name, 0, "JSON", e.what());
  }
}

Json read_json_file(const std::string& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw IoError(path, "cannot read its size");
  if (static_cast<uint64_t>(size) > max_bytes) {
    throw IoError(path, "is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                            " allowed for this file");
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  in.read(text.data(), size);
  if (!in) throw IoError(path, "read failed");
  return parse_json(text, path);
}

std::optional<int64_t> json_int(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    wrong_type(key, where, "an integer below 2^63", *v);
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  wrong_type(key, where, "an integer", *v);
}

std::optional<double> json_number(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) wrong_type(key, where, "a number", *v);
  return v->get<double>();
}

std::optional<bool> json_bool(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) wrong_type(key, where, "true or false", *v);
  return v->get<bool>();
}

std::optional<std::string> json_string(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) wrong_type(key, where, "a string", *v);
  return v->get<std::string>();
}

const Json* json_object(const Json& obj, std::string_view key, const std::string& where) {
  const Json* v = member(obj, key);
  if (v == nullptr) return nullptr;
  if (!v->is_object()) wrong_type(key, where, "an object", *v);
  return v;
}

}  // namespace ferrite::convert
