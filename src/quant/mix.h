// llama.cpp's quantization presets ("file types"): the default weight type
// of each and the rules that give some tensors more or fewer bits (facts of
// llama.cpp's quantizer, so our files have the same layout as its files).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/file.h"
#include "gguf/tensor_type.h"

namespace ferrite::quant {

struct Preset {
  const char* name;       // "Q4_K_M"
  uint32_t file_type;     // value of general.file_type (llama_ftype)
  TensorType base;        // the type most weights get
};

// Looks a preset up by name in any case ("q4_k_m", "Q4_K_M", "f16"); nullptr
// when unknown. Bare type names that are not presets ("q4_K") are accepted
// through the type table with the pure mix.
const Preset* find_preset(std::string_view name);
// Every preset, for help texts.
const std::vector<Preset>& presets();

// What the mix rules need to know of the model.
struct MixModel {
  std::string arch;
  int64_t n_head = 1;
  int64_t n_head_kv = 1;
  int64_t n_expert = 0;
  int64_t n_layer = 1;
  static MixModel from_file(const gguf::File& file);
};

struct MixOptions {
  bool pure = false;          // every quantizable weight gets the base type
  bool has_imatrix = false;   // some rules differ with an importance matrix
  std::vector<std::pair<std::regex, TensorType>> overrides;  // first match wins
};

// Whether llama.cpp quantizes a tensor at all (2-D or more, a weight, not a
// norm, not a router or positional table).
bool tensor_is_quantizable(const gguf::TensorInfo& t);

// The type each tensor of `file` gets under `preset` (in file order).
std::vector<TensorType> plan_mix(const gguf::File& file, const Preset& preset, const MixOptions& options);

// Same for a tensor list (only name, type, n_dims and ne are read) of a
// model described by `model`.
std::vector<TensorType> plan_mix(const std::vector<gguf::TensorInfo>& tensors, const MixModel& model,
                                 const Preset& preset, const MixOptions& options);

}  // namespace ferrite::quant
