#include "gguf/value.h"

#include <bit>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.h"

namespace ferrite::gguf {

std::string value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "u8";
    case ValueType::INT8: return "i8";
    case ValueType::UINT16: return "u16";
    case ValueType::INT16: return "i16";
    case ValueType::UINT32: return "u32";
    case ValueType::INT32: return "i32";
    case ValueType::FLOAT32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::UINT64: return "u64";
    case ValueType::INT64: return "i64";
    case ValueType::FLOAT64: return "f64";
  }
  return "type(" + std::to_string(static_cast<uint32_t>(t)) + ")";
}

uint32_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL: return 1;
    case ValueType::UINT16:
    case ValueType::INT16: return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32: return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64: return 8;
    case ValueType::STRING:
    case ValueType::ARRAY: return 0;
  }
  return 0;
}

Value Value::f32(float v) { return Value(ValueType::FLOAT32, std::bit_cast<uint32_t>(v)); }
Value Value::f64(double v) { return Value(ValueType::FLOAT64, std::bit_cast<uint64_t>(v)); }

Value Value::string(std::string v) {
  Value out(ValueType::STRING, 0);
  out.str_ = std::move(v);
  return out;
}

Value Value::array(ValueType elem, std::vector<Value> items) {
  for (const auto& item : items) {
    if (item.type() != elem) {
      throw InvalidArgument("gguf array of " + value_type_name(elem) + " given an item of type " +
                            value_type_name(item.type()));
    }
  }
  Value out(ValueType::ARRAY, 0);
  out.elem_ = elem;
  out.items_ = std::move(items);
  return out;
}

bool Value::is_integer() const {
  switch (type_) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64: return true;
    default: return false;
  }
}

static bool is_signed(ValueType t) {
  return t == ValueType::INT8 || t == ValueType::INT16 || t == ValueType::INT32 || t == ValueType::INT64;
}

int64_t Value::as_int() const {
  if (type_ == ValueType::BOOL) return static_cast<int64_t>(bits_);
  if (!is_integer()) throw ModelError("expected an integer, found " + value_type_name(type_));
  if (!is_signed(type_) && bits_ > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw ModelError("integer " + std::to_string(bits_) + " does not fit in int64");
  }
  return static_cast<int64_t>(bits_);
}

uint64_t Value::as_uint() const {
  if (type_ == ValueType::BOOL) return bits_;
  if (!is_integer()) throw ModelError("expected an integer, found " + value_type_name(type_));
  if (is_signed(type_) && static_cast<int64_t>(bits_) < 0) {
    throw ModelError("expected a non-negative integer, found " + std::to_string(static_cast<int64_t>(bits_)));
  }
  return bits_;
}

double Value::as_double() const {
  if (type_ == ValueType::FLOAT32) return std::bit_cast<float>(static_cast<uint32_t>(bits_));
  if (type_ == ValueType::FLOAT64) return std::bit_cast<double>(bits_);
  if (is_integer()) {
    return is_signed(type_) ? static_cast<double>(static_cast<int64_t>(bits_)) : static_cast<double>(bits_);
  }
  throw ModelError("expected a number, found " + value_type_name(type_));
}

bool Value::as_bool() const {
  if (type_ != ValueType::BOOL) throw ModelError("expected a bool, found " + value_type_name(type_));
  return bits_ != 0;
}

const std::string& Value::as_string() const {
  if (type_ != ValueType::STRING) throw ModelError("expected a string, found " + value_type_name(type_));
  return str_;
}

ValueType Value::array_type() const {
  if (type_ != ValueType::ARRAY) throw ModelError("expected an array, found " + value_type_name(type_));
  return elem_;
}

const std::vector<Value>& Value::items() const {
  if (type_ != ValueType::ARRAY) throw ModelError("expected an array, found " + value_type_name(type_));
  return items_;
}

static std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string Value::to_string(size_t max_items) const {
  switch (type_) {
    case ValueType::STRING: return quote(str_);
    case ValueType::BOOL: return bits_ ? "true" : "false";
    case ValueType::FLOAT32:
    case ValueType::FLOAT64: {
      std::ostringstream ss;
      ss.precision(type_ == ValueType::FLOAT32 ? 9 : 17);
      ss << as_double();
      return ss.str();
    }
    case ValueType::ARRAY: {
      std::string out = "[";
      const size_t n = std::min(items_.size(), max_items);
      for (size_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        out += items_[i].to_string(max_items);
      }
      if (items_.size() > n) out += ", ... (" + std::to_string(items_.size()) + " items)";
      return out + "]";
    }
    default:
      return is_signed(type_) ? std::to_string(static_cast<int64_t>(bits_)) : std::to_string(bits_);
  }
}

}  // namespace ferrite::gguf
