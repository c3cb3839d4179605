// Safetensors checkpoints, memory-mapped and validated before any tensor is
// read. Layout of one file (little-endian):
//   u64 N, then N bytes of JSON:
//     {"__metadata__": {str: str}, NAME: {"dtype": "BF16", "shape": [..],
//      "data_offsets": [begin, end]}, ...}
//   then the data buffer; offsets are relative to its start.
// Every tensor must lie inside the buffer with exactly shape × dtype bytes,
// and the tensors must tile the buffer without gaps or overlaps (as the
// format's reference implementation requires). A checkpoint is one
// model.safetensors or the shards listed by model.safetensors.index.json.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"

namespace ferrite::convert {

// A header larger than this is refused (the format's own limit is 100 MB).
constexpr uint64_t kMaxSafetensorsHeader = 100ull << 20;
constexpr size_t kMaxSafetensorsDims = 8;

struct StTensor {
  std::string name;
  std::string dtype;            // as stored: "F32", "BF16", ...
  uint32_t elem_bytes = 0;
  std::vector<int64_t> shape;   // outermost first, as stored
  uint64_t n_elements = 1;
  const uint8_t* data = nullptr;
  uint64_t n_bytes = 0;
  std::string file;             // the file holding it
  uint64_t offset = 0;          // of its first byte in that file

  // True for F32, F16, BF16 and F64, which to_f32 converts.
  bool is_float() const;
  // "[4096, 11008]"
  std::string shape_string() const;
};

class SafetensorsFile {
 public:
  // Maps and validates a file. Throws IoError / FormatError.
  static SafetensorsFile open(const std::string& path);
  // Validates an image in memory (not owned; must outlive the object).
  static SafetensorsFile parse(const uint8_t* data, uint64_t size, const std::string& name);

  const std::vector<StTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::unique_ptr<MappedFile> map_;
  std::vector<StTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a checkpoint folder.
class Checkpoint {
 public:
  // model.safetensors.index.json when present (its weight_map must name
  // exactly the tensors of the shards it lists), else every model*.safetensors
  // file. Throws IoError / FormatError / ModelError (no safetensors file, a
  // shard missing, a tensor in two shards).
  static Checkpoint open_dir(const std::string& dir);
  // One file (tests, fuzzing).
  static Checkpoint from_file(SafetensorsFile file);

  const StTensor* find(std::string_view name) const;
  // Every tensor, sorted by name.
  const std::vector<const StTensor*>& tensors() const { return sorted_; }
  const std::vector<std::string>& files() const { return files_; }

 private:
  void index();
  std::vector<SafetensorsFile> parts_;
  std::vector<std::string> files_;
  std::vector<const StTensor*> sorted_;
  std::unordered_map<std::string, const StTensor*> by_name_;
};

// The elements of a float tensor (F32, F16, BF16, F64) as float32, into
// `out` (n_elements floats). Throws ModelError for other dtypes.
void to_f32(const StTensor& t, float* out);

}  // namespace ferrite::convert
