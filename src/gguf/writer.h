// GGUF writer. Metadata and tensor descriptions are declared first; the data
// of each tensor is then streamed in declaration order, so a multi-gigabyte
// model never has to be held in memory.
//
//   gguf::Writer w;
//   w.set("general.architecture", gguf::Value::string("llama"));
//   w.add_tensor("token_embd.weight", TensorType::Q4_0, {4096, 32000});
//   w.open("out.gguf");                       // writes the header
//   w.write_tensor_data(bytes, n);            // once per tensor, in order
//   w.close();                                // pads, flushes, renames
//
// The file is written to "<path>.tmp" and renamed on close(), so a failed
// write never leaves a truncated model under the final name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace ferrite::gguf {

class Writer {
 public:
  Writer() = default;
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Sets a metadata key (replacing an earlier value of the same key, keeping
  // its position). "general.alignment" must be a u32 power of two.
  void set(const std::string& key, Value value);
  // Removes a key if present.
  void remove(const std::string& key);
  // Copies every key of `file` (in order).
  void copy_metadata(const File& file);

  // Declares a tensor. `ne` is innermost first (1 to 4 dims); ne[0] must be a
  // multiple of the type's block size.
  void add_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& ne);

  // Writes the header to "<path>.tmp".
  void open(const std::string& path);
  // Appends `n` bytes of the current tensor's data; a tensor may be written
  // in several calls. Throws when more bytes are given than declared.
  void write_tensor_data(const void* data, uint64_t n);
  // Checks every tensor was written in full, flushes, and renames the file
  // into place.
  void close();

  // Serialises the whole file to memory (header + data of `tensor_data`,
  // given in declaration order). For tests and small files.
  std::vector<uint8_t> to_bytes(const std::vector<std::vector<uint8_t>>& tensor_data);

  uint32_t alignment() const;
  size_t n_tensors() const { return tensors_.size(); }

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    uint64_t n_bytes;
    uint64_t offset;
  };
  std::vector<uint8_t> header_bytes() const;
  void pad_to_alignment(uint64_t written);

  std::vector<KeyValue> kvs_;
  std::vector<PendingTensor> tensors_;
  std::string path_;
  std::FILE* out_ = nullptr;
  size_t current_ = 0;            // tensor being written
  uint64_t current_written_ = 0;  // bytes of it written so far
};

}  // namespace ferrite::gguf
