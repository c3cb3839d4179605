// Typed access to the metadata the engine needs: the architecture, its
// hyperparameters (keys are prefixed by the architecture name, e.g.
// "llama.block_count"), the tokenizer fields and the chat template. Missing
// required keys and values of the wrong type are ModelErrors naming the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"

namespace ferrite::gguf {

class Metadata {
 public:
  explicit Metadata(const File& file) : file_(file) {}

  const File& file() const { return file_; }

  // general.architecture (required).
  std::string architecture() const;
  // general.name, or the file name when absent.
  std::string name() const;

  // "<arch>.<suffix>", e.g. arch_key("block_count") == "llama.block_count".
  std::string arch_key(std::string_view suffix) const;

  bool has(std::string_view key) const { return file_.find(key) != nullptr; }

  // Required scalars: throw ModelError when absent or of the wrong kind.
  uint64_t get_uint(std::string_view key) const;
  int64_t get_int(std::string_view key) const;
  float get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::string get_string(std::string_view key) const;

  // Optional scalars: nullopt when absent; ModelError when of the wrong kind.
  std::optional<uint64_t> opt_uint(std::string_view key) const;
  std::optional<int64_t> opt_int(std::string_view key) const;
  std::optional<float> opt_float(std::string_view key) const;
  std::optional<bool> opt_bool(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;

  // Arrays (empty when absent). Elements must be of a matching kind.
  std::vector<std::string> string_array(std::string_view key) const;
  std::vector<float> float_array(std::string_view key) const;
  std::vector<int64_t> int_array(std::string_view key) const;

  // A per-layer value stored either as a scalar (same for every layer) or as
  // an array of n_layer values (e.g. "llama.attention.head_count_kv").
  std::vector<uint64_t> per_layer_uint(std::string_view key, uint64_t n_layer) const;

 private:
  [[noreturn]] void wrong(std::string_view key, const std::string& why) const;
  const File& file_;
};

// Summary used by `ferrite info` and by the model loader.
struct HParamsSummary {
  std::string architecture;
  std::string name;
  std::optional<uint64_t> context_length;
  std::optional<uint64_t> embedding_length;
  std::optional<uint64_t> block_count;
  std::optional<uint64_t> feed_forward_length;
  std::optional<uint64_t> head_count;
  std::optional<uint64_t> head_count_kv;
  std::optional<uint64_t> rope_dimension_count;
  std::optional<float> rope_freq_base;
  std::optional<float> norm_epsilon;
  std::optional<uint64_t> expert_count;
  std::optional<uint64_t> expert_used_count;
  std::optional<uint64_t> vocab_size;
  // Tokenizer.
  std::optional<std::string> tokenizer_model;  // "llama", "gpt2", "bert", "t5", ...
  std::optional<std::string> tokenizer_pre;
  uint64_t n_tokens = 0;
  std::optional<int64_t> bos_token_id;
  std::optional<int64_t> eos_token_id;
  bool has_chat_template = false;
};

HParamsSummary summarize(const File& file);

}  // namespace ferrite::gguf
