// GGUF reader: a model file (or a set of split files) memory-mapped, its
// metadata parsed and every tensor located and bounds-checked. Tensor data is
// never copied: TensorInfo::data points into the mapping.
//
// Layout (little-endian):
//   "GGUF" u32 version u64 n_tensors u64 n_kv
//   n_kv × (string key, u32 value_type, value)
//   n_tensors × (string name, u32 n_dims, n_dims × u64 ne, u32 type, u64 offset)
//   padding to `general.alignment` (default 32), then the tensor data.
// Strings are u64 length + bytes. Versions 2 and 3 are read (v1 used 32-bit
// counts and is refused).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mapped_file.h"
#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace ferrite::gguf {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;
// Nested arrays deeper than this are refused (real files use depth 1).
constexpr uint32_t kMaxArrayDepth = 16;

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::F32;
  uint32_t n_dims = 0;
  std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  // elements per dimension, innermost first
  uint64_t offset = 0;      // as stored: relative to the data section of its file
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint32_t split = 0;       // which file of a split set holds it
  const uint8_t* data = nullptr;  // into the mapping (nullptr for File::parse of a header only)

  // Bytes of one row (ne[0] elements).
  uint64_t row_bytes() const { return tensor_row_bytes(type, static_cast<uint64_t>(ne[0])); }
  std::string shape_string() const;  // "[4096, 32000]"
};

struct KeyValue {
  std::string key;
  Value value;
};

class File {
 public:
  // Opens and validates a GGUF file. When it is the first part of a split
  // set (`split.count` > 1, name ending -00001-of-0000N.gguf) the other parts
  // are opened too and their tensors joined. Throws IoError / FormatError.
  static File open(const std::string& path);

  // Parses a GGUF image in memory (not owned; must outlive the File). Used by
  // tests and the fuzzer. `name` appears in error messages.
  static File parse(const uint8_t* data, uint64_t size, const std::string& name);

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // of the first file
  uint32_t n_splits() const { return static_cast<uint32_t>(maps_.empty() ? 1 : maps_.size()); }

  // Metadata in file order.
  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const Value* find(std::string_view key) const;
  // The value of `key`; throws ModelError naming the key and file when absent.
  const Value& get(std::string_view key) const;

  // Tensors in file order (split after split).
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // Throws ModelError naming the tensor and file when absent.
  const TensorInfo& tensor(std::string_view name) const;

  // Total bytes of tensor data.
  uint64_t tensor_bytes() const;

 private:
  File() = default;
  // Parses one file into this object (metadata replaced, tensors appended).
  void parse_into(const uint8_t* data, uint64_t size, const std::string& name, uint32_t split_index);
  void index();

  std::string path_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> kv_index_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::vector<std::unique_ptr<MappedFile>> maps_;
};

// Name of split part `index` (0-based) of `count` for a prefix:
// split_path("m", 0, 3) == "m-00001-of-00003.gguf".
std::string split_path(const std::string& prefix, uint32_t index, uint32_t count);

}  // namespace ferrite::gguf
