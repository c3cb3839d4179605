// Importance matrices in llama.cpp's imatrix file formats. Read: the GGUF
// form (imatrix_collector.h describes it; each matrix's importance is its
// sums / counts, 1 where it saw no row) and the legacy binary ".dat" layout;
// written: the legacy layout (the GGUF form by ImatrixCollector):
//   i32 n_entries
//   n_entries × (i32 name_len, name bytes, i32 ncall, i32 n_values, f32 × n_values)
//   optional trailer: i32 last_chunk, i32 dataset_len, dataset bytes
// Each value is the sum over calls of the mean squared activation of one
// input column; dividing by ncall gives the importance a quantizer uses.
// For 3-D (expert) tensors the values of all experts follow one another.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace ferrite::quant {

struct ImatrixEntry {
  std::string name;
  int32_t ncall = 0;
  std::vector<float> values;  // as stored in the file
};

class Imatrix {
 public:
  // Reads a file of either format; throws IoError / FormatError naming the problem.
  static Imatrix read(const std::string& path);
  // Parses an image in memory (`name` appears in errors).
  static Imatrix parse(const uint8_t* data, size_t size, const std::string& name);

  void write(const std::string& path) const;
  std::vector<uint8_t> to_bytes() const;

  void add(ImatrixEntry e);
  const std::vector<ImatrixEntry>& entries() const { return entries_; }

  // The importance of tensor `name`'s columns (values / ncall), or nullptr.
  const std::vector<float>* importance(const std::string& name) const;

  int32_t last_chunk = 0;
  std::string dataset;

 private:
  std::vector<ImatrixEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::vector<float>> normalized_;
};

}  // namespace ferrite::quant
