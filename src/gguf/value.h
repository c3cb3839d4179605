// A GGUF metadata value: one of the twelve scalar types, a string, or an
// array (of scalars, strings or arrays). Keeps the on-disk type so that a
// value read and written again is byte-identical.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ferrite::gguf {

// On-disk value type codes.
enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
constexpr uint32_t kValueTypeCount = 13;

// "u32", "string", "array", ... ; "type(N)" for an unknown code.
std::string value_type_name(ValueType t);

// Encoded size of a scalar of type `t` (0 for STRING and ARRAY).
uint32_t value_type_size(ValueType t);

class Value {
 public:
  Value() = default;

  // Constructors for each on-disk type.
  static Value u8(uint8_t v) { return Value(ValueType::UINT8, static_cast<uint64_t>(v)); }
  static Value i8(int8_t v) { return Value(ValueType::INT8, static_cast<uint64_t>(static_cast<int64_t>(v))); }
  static Value u16(uint16_t v) { return Value(ValueType::UINT16, static_cast<uint64_t>(v)); }
  static Value i16(int16_t v) { return Value(ValueType::INT16, static_cast<uint64_t>(static_cast<int64_t>(v))); }
  static Value u32(uint32_t v) { return Value(ValueType::UINT32, static_cast<uint64_t>(v)); }
  static Value i32(int32_t v) { return Value(ValueType::INT32, static_cast<uint64_t>(static_cast<int64_t>(v))); }
  static Value u64(uint64_t v) { return Value(ValueType::UINT64, v); }
  static Value i64(int64_t v) { return Value(ValueType::INT64, static_cast<uint64_t>(v)); }
  static Value f32(float v);
  static Value f64(double v);
  static Value boolean(bool v) { return Value(ValueType::BOOL, v ? 1u : 0u); }
  static Value string(std::string v);
  // An array whose items all have type `elem` (checked).
  static Value array(ValueType elem, std::vector<Value> items);

  ValueType type() const { return type_; }
  bool is_integer() const;
  bool is_float() const { return type_ == ValueType::FLOAT32 || type_ == ValueType::FLOAT64; }
  bool is_string() const { return type_ == ValueType::STRING; }
  bool is_array() const { return type_ == ValueType::ARRAY; }

  // Accessors. Integers convert between widths when the value fits; a float
  // accessor accepts integers; anything else throws ferrite::ModelError.
  int64_t as_int() const;
  uint64_t as_uint() const;
  double as_double() const;
  float as_float() const { return static_cast<float>(as_double()); }
  bool as_bool() const;
  const std::string& as_string() const;

  // Arrays.
  ValueType array_type() const;              // element type
  const std::vector<Value>& items() const;   // elements
  size_t size() const { return items().size(); }

  // Human-readable rendering; arrays longer than `max_items` are elided.
  std::string to_string(size_t max_items = 8) const;

 private:
  Value(ValueType t, uint64_t bits) : type_(t), bits_(bits) {}

  ValueType type_ = ValueType::UINT8;
  uint64_t bits_ = 0;             // integers, bool; float/double bit patterns
  std::string str_;               // STRING
  ValueType elem_ = ValueType::UINT8;  // ARRAY element type
  std::vector<Value> items_;      // ARRAY
};

}  // namespace ferrite::gguf
