#include "gguf/file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.h"

namespace ferrite::gguf {
namespace {

// Smallest possible encodings, used to bound counts before allocating.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;          // empty key, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 4 + 8;  // empty name, n_dims=0, type, offset
constexpr uint64_t kMinArrayBytes = 4 + 8;           // element type + count
constexpr uint64_t kMinStringBytes = 8;              // length only

// A bounds-checked little-endian reader over a byte range.
class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& file) : data_(data), size_(size), file_(file) {}

  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(uint64_t at, const std::string& field, const std::string& problem) const {
    throw FormatError(file_, at, field, problem);
  }

  void need(uint64_t n, const std::string& field) const {
    if (n > remaining()) {
      fail(pos_, field, "file truncated: needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) +
                            " left");
    }
  }

  template <typename T>
  T read(const std::string& field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(const std::string& field) {
    const uint64_t at = pos_;
    const uint64_t len = read<uint64_t>(field + " (string length)");
    if (len > remaining()) {
      fail(at, field, "string length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                          " bytes left in the file");
    }
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  // Reads a u64 count of items each at least `min_item_bytes` long and
  // checks that many could fit in the rest of the file.
  uint64_t read_count(const std::string& field, uint64_t min_item_bytes) {
    const uint64_t at = pos_;
    const uint64_t n = read<uint64_t>(field);
    if (min_item_bytes > 0 && n > remaining() / min_item_bytes) {
      fail(at, field, "count " + std::to_string(n) + " cannot fit in the " + std::to_string(remaining()) +
                          " bytes left in the file");
    }
    return n;
  }

  Value read_value(ValueType type, const std::string& field, uint32_t depth) {
    switch (type) {
      case ValueType::UINT8: return Value::u8(read<uint8_t>(field));
      case ValueType::INT8: return Value::i8(read<int8_t>(field));
      case ValueType::UINT16: return Value::u16(read<uint16_t>(field));
      case ValueType::INT16: return Value::i16(read<int16_t>(field));
      case ValueType::UINT32: return Value::u32(read<uint32_t>(field));
      case ValueType::INT32: return Value::i32(read<int32_t>(field));
      case ValueType::FLOAT32: return Value::f32(read<float>(field));
      case ValueType::UINT64: return Value::u64(read<uint64_t>(field));
      case ValueType::INT64: return Value::i64(read<int64_t>(field));
      case ValueType::FLOAT64: return Value::f64(read<double>(field));
      case ValueType::BOOL: {
        const uint64_t at = pos_;
        const uint8_t b = read<uint8_t>(field);
        if (b > 1) fail(at, field, "bool value " + std::to_string(b) + " is neither 0 nor 1");
        return Value::boolean(b != 0);
      }
      case ValueType::STRING: return Value::string(read_string(field));
      case ValueType::ARRAY: {
        if (depth >= kMaxArrayDepth) {
          fail(pos_, field, "arrays nested deeper than " + std::to_string(kMaxArrayDepth));
        }
        const uint64_t type_at = pos_;
        const uint32_t raw_elem = read<uint32_t>(field + " (array element type)");
        if (raw_elem >= kValueTypeCount) {
          fail(type_at, field, "unknown array element type " + std::to_string(raw_elem));
        }
        const auto elem = static_cast<ValueType>(raw_elem);
        uint64_t min_item = value_type_size(elem);
        if (elem == ValueType::STRING) min_item = kMinStringBytes;
        if (elem == ValueType::ARRAY) min_item = kMinArrayBytes;
        const uint64_t n = read_count(field + " (array length)", min_item);
        std::vector<Value> items;
        items.reserve(static_cast<size_t>(n));
        for (uint64_t i = 0; i < n; ++i) {
          items.push_back(read_value(elem, field, depth + 1));
        }
        return Value::array(elem, std::move(items));
      }
    }
    fail(pos_, field, "unknown value type " + std::to_string(static_cast<uint32_t>(type)));
  }

 private:
  const uint8_t* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& file_;
};

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

}  // namespace

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (uint32_t i = 0; i < n_dims; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

std::string split_path(const std::string& prefix, uint32_t index, uint32_t count) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%05u-of-%05u.gguf", index + 1, count);
  return prefix + buf;
}

File File::parse(const uint8_t* data, uint64_t size, const std::string& name) {
  File f;
  f.path_ = name;
  f.parse_into(data, size, name, 0);
  f.index();
  return f;
}

File File::open(const std::string& path) {
  File f;
  f.path_ = path;
  f.maps_.push_back(std::make_unique<MappedFile>(path));
  f.parse_into(f.maps_[0]->data(), f.maps_[0]->size(), path, 0);
  f.index();

  const Value* count_v = f.find("split.count");
  const uint64_t count = count_v ? count_v->as_uint() : 1;
  if (count <= 1) return f;

  constexpr uint64_t kMaxSplits = 9999;
  if (count > kMaxSplits) {
    throw ModelError(path + ": split.count " + std::to_string(count) + " is larger than " +
                     std::to_string(kMaxSplits));
  }
  const Value* no_v = f.find("split.no");
  if (no_v && no_v->as_uint() != 0) {
    throw ModelError(path + ": is split part " + std::to_string(no_v->as_uint() + 1) + " of " +
                     std::to_string(count) + "; open the first part");
  }
  // The first part is named <prefix>-00001-of-NNNNN.gguf.
  const std::string first_suffix = split_path("", 0, static_cast<uint32_t>(count));
  if (path.size() <= first_suffix.size() ||
      path.compare(path.size() - first_suffix.size(), first_suffix.size(), first_suffix) != 0) {
    throw ModelError(path + ": split.count is " + std::to_string(count) + " but the name does not end in " +
                     first_suffix);
  }
  const std::string prefix = path.substr(0, path.size() - first_suffix.size());
  for (uint32_t i = 1; i < count; ++i) {
    const std::string part = split_path(prefix, i, static_cast<uint32_t>(count));
    f.maps_.push_back(std::make_unique<MappedFile>(part));
    File sub;
    sub.parse_into(f.maps_.back()->data(), f.maps_.back()->size(), part, i);
    sub.index();
    const Value* sub_no = sub.find("split.no");
    if (!sub_no || sub_no->as_uint() != i) {
      throw ModelError(part + ": split.no is missing or not " + std::to_string(i));
    }
    for (auto& t : sub.tensors_) f.tensors_.push_back(std::move(t));
  }
  f.index();
  return f;
}

void File::parse_into(const uint8_t* data, uint64_t size, const std::string& name, uint32_t split_index) {
  Cursor c(data, size, name);
  const uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kMagic) {
    c.fail(0, "magic", "not a GGUF file (expected \"GGUF\")");
  }
  const uint32_t version = c.read<uint32_t>("version");
  if (version == 1) {
    c.fail(4, "version", "GGUF version 1 is not supported (only 2 and 3)");
  }
  if (version != 2 && version != 3) {
    c.fail(4, "version", "unsupported GGUF version " + std::to_string(version) + " (only 2 and 3)");
  }
  const uint64_t n_tensors = c.read_count("tensor count", kMinTensorInfoBytes);
  const uint64_t n_kv = c.read_count("metadata count", kMinKvBytes);

  std::vector<KeyValue> kvs;
  kvs.reserve(static_cast<size_t>(n_kv));
  std::unordered_map<std::string, size_t> seen_keys;
  uint32_t alignment = kDefaultAlignment;
  for (uint64_t i = 0; i < n_kv; ++i) {
    const uint64_t key_at = c.pos();
    std::string key = c.read_string("metadata key #" + std::to_string(i));
    if (key.empty()) c.fail(key_at, "metadata key #" + std::to_string(i), "empty key");
    if (seen_keys.count(key)) c.fail(key_at, "metadata key '" + key + "'", "duplicate key");
    const uint64_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>("type of '" + key + "'");
    if (raw_type >= kValueTypeCount) {
      c.fail(type_at, "type of '" + key + "'", "unknown value type " + std::to_string(raw_type));
    }
    const uint64_t value_at = c.pos();
    Value v = c.read_value(static_cast<ValueType>(raw_type), "value of '" + key + "'", 0);
    if (key == "general.alignment") {
      if (v.type() != ValueType::UINT32) {
        c.fail(value_at, "general.alignment", "must be a u32, found " + value_type_name(v.type()));
      }
      const uint64_t a = v.as_uint();
      if (a == 0 || (a & (a - 1)) != 0) {
        c.fail(value_at, "general.alignment", "must be a non-zero power of two, found " + std::to_string(a));
      }
      alignment = static_cast<uint32_t>(a);
    }
    seen_keys.emplace(key, kvs.size());
    kvs.push_back({std::move(key), std::move(v)});
  }

  std::vector<TensorInfo> tensors;
  tensors.reserve(static_cast<size_t>(n_tensors));
  std::unordered_map<std::string, size_t> seen_tensors;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    const uint64_t name_at = c.pos();
    t.name = c.read_string("tensor #" + std::to_string(i) + " name");
    if (t.name.empty()) c.fail(name_at, "tensor #" + std::to_string(i) + " name", "empty name");
    const std::string field = "tensor '" + t.name + "'";
    if (seen_tensors.count(t.name)) c.fail(name_at, field, "duplicate tensor name");
    const uint64_t dims_at = c.pos();
    t.n_dims = c.read<uint32_t>(field + " n_dims");
    if (t.n_dims > kMaxDims) {
      c.fail(dims_at, field + " n_dims", std::to_string(t.n_dims) + " dimensions (at most " +
                                             std::to_string(kMaxDims) + ")");
    }
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t ne_at = c.pos();
      const uint64_t ne = c.read<uint64_t>(field + " ne[" + std::to_string(d) + "]");
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
          mul_overflows(n_elements, ne, &n_elements)) {
        c.fail(ne_at, field + " ne[" + std::to_string(d) + "]", "element count overflows");
      }
      t.ne[d] = static_cast<int64_t>(ne);
    }
    const uint64_t type_at = c.pos();
    const uint32_t raw_type = c.read<uint32_t>(field + " type");
    const TensorTypeInfo* info = tensor_type_info(raw_type);
    if (info == nullptr) c.fail(type_at, field + " type", "unknown tensor type " + std::to_string(raw_type));
    t.type = info->type;
    if (t.ne[0] % info->block_size != 0) {
      c.fail(type_at, field + " ne[0]", std::to_string(t.ne[0]) + " is not a multiple of the " +
                                            info->name + " block size " + std::to_string(info->block_size));
    }
    const uint64_t off_at = c.pos();
    t.offset = c.read<uint64_t>(field + " offset");
    if (t.offset % alignment != 0) {
      c.fail(off_at, field + " offset",
             std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(alignment));
    }
    t.n_elements = n_elements;
    uint64_t bytes = 0;
    if (mul_overflows(n_elements / info->block_size, info->block_bytes, &bytes)) {
      c.fail(off_at, field, "byte size overflows");
    }
    t.n_bytes = bytes;
    t.split = split_index;
    seen_tensors.emplace(t.name, i);
    tensors.push_back(std::move(t));
  }

  // Data section: aligned after the header. A file without tensors may end
  // right after its metadata.
  const uint64_t header_end = c.pos();
  uint64_t data_offset = header_end;
  if (data_offset % alignment != 0) data_offset += alignment - data_offset % alignment;
  if (!tensors.empty() && data_offset > size) {
    c.fail(header_end, "tensor data", "file truncated before the data section (offset " +
                                          std::to_string(data_offset) + ")");
  }
  const uint64_t data_size = tensors.empty() ? 0 : size - data_offset;
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors.size());
  for (auto& t : tensors) {
    if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
      c.fail(data_offset + std::min(t.offset, data_size), "tensor '" + t.name + "' data",
             "extends past the end of the file (offset " + std::to_string(t.offset) + ", " +
                 std::to_string(t.n_bytes) + " bytes, data section " + std::to_string(data_size) + " bytes)");
    }
    t.data = data + data_offset + t.offset;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo* prev = by_offset[i - 1];
    const TensorInfo* cur = by_offset[i];
    if (prev->n_bytes > 0 && cur->offset < prev->offset + prev->n_bytes) {
      c.fail(data_offset + cur->offset, "tensor '" + cur->name + "' data",
             "overlaps tensor '" + prev->name + "'");
    }
  }

  version_ = version;
  alignment_ = alignment;
  data_offset_ = data_offset;
  kvs_ = std::move(kvs);
  for (auto& t : tensors) tensors_.push_back(std::move(t));
}

void File::index() {
  kv_index_.clear();
  for (size_t i = 0; i < kvs_.size(); ++i) kv_index_.emplace(kvs_[i].key, i);
  tensor_index_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (!tensor_index_.emplace(tensors_[i].name, i).second) {
      throw ModelError(path_ + ": tensor '" + tensors_[i].name + "' appears in more than one split");
    }
  }
}

const Value* File::find(std::string_view key) const {
  auto it = kv_index_.find(std::string(key));
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const Value& File::get(std::string_view key) const {
  const Value* v = find(key);
  if (!v) throw ModelError(path_ + ": missing required metadata key '" + std::string(key) + "'");
  return *v;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& File::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw ModelError(path_ + ": missing tensor '" + std::string(name) + "'");
  return *t;
}

uint64_t File::tensor_bytes() const {
  uint64_t total = 0;
  for (const auto& t : tensors_) total += t.n_bytes;
  return total;
}

}  // namespace ferrite::gguf
