// `ferrite convert --lora DIR --base BASE.gguf -o OUT.gguf`: a PEFT LoRA
// adapter folder (adapter_config.json: r, lora_alpha, target_modules,
// use_rslora; adapter_model.safetensors: base_model.model.<HF name>.lora_A.weight
// [r, n_in] and .lora_B.weight [n_out, r]) to llama.cpp's GGUF adapter
// (lora_writer.h), as llama.cpp's convert_lora_to_gguf.py does: the HF names
// mapped by the base architecture's tensor rules (arch.h), llama's Q/K row
// permutation applied to lora_B, alpha written as given. The base GGUF gives
// the architecture, head counts and the shapes every pair is checked
// against. Differences: use_rslora (scale alpha / sqrt(r)) is written as
// alpha * sqrt(r), so that llama.cpp's alpha / r gives PEFT's scale;
// rank_pattern / alpha_pattern, embedding and expert adapters and
// modules_to_save are refused with a clear error.
#pragma once

#include <string>

#include "convert/lora_writer.h"
#include "gguf/tensor_type.h"

namespace ferrite::convert {

// Reads and maps the adapter (no file written). Throws IoError /
// FormatError / ModelError / InvalidArgument naming the file and tensor.
LoraFile read_peft_lora(const std::string& dir, const std::string& base_gguf);

// read_peft_lora + write_lora to `out`; returns the adapter written (its pairs' data dropped).
LoraFile convert_peft_lora(const std::string& dir, const std::string& base_gguf, const std::string& out,
                           TensorType type);

}  // namespace ferrite::convert
