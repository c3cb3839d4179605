#include "convert/hf_files.h"

#include <filesystem>

#include "core/error.h"

namespace ferrite::convert {
namespace {

std::optional<Json> optional_json(const HfFiles& f, const std::string& name, uint64_t cap) {
  if (!f.has(name)) return std::nullopt;
  return read_json_file(f.path(name), cap);
}

}  // namespace

HfFiles HfFiles::open(const std::string& dir) {
  HfFiles f;
  f.dir = dir;
  if (!std::filesystem::is_directory(dir)) throw IoError(dir, "is not a directory");
  if (!f.has("config.json")) throw IoError(f.path("config.json"), "missing: a checkpoint folder needs config.json");
  f.config = read_json_file(f.path("config.json"), kMaxConfigBytes);
  if (!f.config.is_object()) throw ModelError(f.path("config.json") + ": is not a JSON object");
  f.tokenizer = optional_json(f, "tokenizer.json", kMaxTokenizerJsonBytes);
  f.tokenizer_config = optional_json(f, "tokenizer_config.json", kMaxTokenizerJsonBytes);
  f.generation_config = optional_json(f, "generation_config.json", kMaxConfigBytes);
  for (const auto* j : {&f.tokenizer, &f.tokenizer_config, &f.generation_config}) {
    if (*j && !(*j)->is_object()) throw ModelError(dir + ": a tokenizer or generation file is not a JSON object");
  }
  return f;
}

std::string HfFiles::path(const std::string& file) const { return (std::filesystem::path(dir) / file).string(); }

bool HfFiles::has(const std::string& file) const { return std::filesystem::is_regular_file(path(file)); }

}  // namespace ferrite::convert
