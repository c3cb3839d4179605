// Factories of the architecture families (one arch_*.cpp each), listed in
// registry.cpp. Adding a family: write arch_<family>.cpp, declare its
// factory here, add a row to the table in registry.cpp.
#pragma once

#include <memory>

#include "model/architecture.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_llama(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_qwen2(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_qwen2moe(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_qwen3(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_gemma(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_gemma2(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_gemma3(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_phi3(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_gpt2(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_gptneox(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_starcoder2(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_falcon(const gguf::File& file, HParams& hp);
std::unique_ptr<Architecture> make_bert(const gguf::File& file, HParams& hp);

}  // namespace ferrite::model
