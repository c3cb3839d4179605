// `ferrite convert`: a Hugging Face checkpoint folder (config.json,
// safetensors, tokenizer files) to one GGUF file with llama.cpp's tensor
// names and metadata keys. See README.md in this folder.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "convert/arch.h"
#include "convert/tensor_plan.h"
#include "convert/vocab.h"
#include "gguf/tensor_type.h"

namespace ferrite::convert {

struct ConvertOptions {
  TensorType outtype = TensorType::F16;  // F32, F16, BF16 or Q8_0 (llama.cpp's default: F16)
  VocabOptions vocab;
  std::string name;                      // general.name; "" = the folder's name
};

// Everything decided before a byte is written.
struct ConvertPlan {
  const ArchDef* arch = nullptr;
  std::string hf_class;
  std::vector<gguf::KeyValue> kvs;   // all metadata, in file order
  std::vector<PlannedTensor> tensors;
  Dims dims;
  std::vector<std::string> notes;
  std::string vocab_summary;
};

// Reads config.json, the checkpoint's tensor index and the tokenizer files,
// and plans the output. Throws IoError / FormatError / ModelError /
// InvalidArgument with what is wrong (unknown architecture, missing file,
// tensor that does not fit config.json, ...).
ConvertPlan plan_conversion(const HfFiles& files, const Checkpoint& ckpt, const ConvertOptions& opt);

// Progress: tensor i of n is being written.
using ConvertProgress = std::function<void(size_t i, size_t n, const PlannedTensor& t)>;

// Writes the plan to `out` (through "<out>.tmp", renamed when complete).
void write_gguf(const ConvertPlan& plan, const std::string& out, const ConvertProgress& progress = nullptr);

// plan_conversion + write_gguf for a folder. The returned plan's tensors
// keep their names, shapes and types but no data (the checkpoint is closed).
ConvertPlan convert_checkpoint(const std::string& dir, const std::string& out, const ConvertOptions& opt,
                               const ConvertProgress& progress = nullptr);

// llama.cpp's general.file_type for an output type (ALL_F32 0, MOSTLY_F16 1,
// MOSTLY_Q8_0 7, MOSTLY_BF16 32). InvalidArgument for other types.
uint32_t file_type_of(TensorType outtype);

}  // namespace ferrite::convert
