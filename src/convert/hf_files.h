// The JSON files of a Hugging Face checkpoint folder, read once with size
// limits: config.json (required), tokenizer.json, tokenizer_config.json and
// generation_config.json (each optional).
#pragma once

#include <optional>
#include <string>

#include "convert/json_file.h"

namespace ferrite::convert {

// Size caps: a 256K-token tokenizer.json is ~35 MB; configs are a few KB.
constexpr uint64_t kMaxConfigBytes = 16ull << 20;
constexpr uint64_t kMaxTokenizerJsonBytes = 512ull << 20;

struct HfFiles {
  std::string dir;
  Json config;
  std::optional<Json> tokenizer;         // tokenizer.json
  std::optional<Json> tokenizer_config;  // tokenizer_config.json
  std::optional<Json> generation_config; // generation_config.json

  // Reads the folder's JSON files. Throws IoError naming config.json when it
  // is missing, FormatError when a file is not JSON.
  static HfFiles open(const std::string& dir);

  std::string path(const std::string& file) const;
  bool has(const std::string& file) const;
};

}  // namespace ferrite::convert
