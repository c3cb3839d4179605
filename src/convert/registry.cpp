#include <algorithm>

#include "convert/arch.h"

namespace ferrite::convert {
namespace {

const std::vector<ArchDef>& all_archs() {
  static const std::vector<ArchDef> archs = [] {
    std::vector<ArchDef> out;
    for (auto family : {llama_archs, qwen_archs, gemma_archs, phi3_archs, gpt2_archs, gptneox_archs, starcoder2_archs,
                        falcon_archs, bert_archs, mamba2_archs, granite_hybrid_archs, granite_archs, olmo_archs,
                        cohere_archs, glm4_archs, ernie_archs, hunyuan_archs, layer_norm_decoder_archs,
                        gpt_line_archs, deepseek2_archs, smollm3_archs,
                        llama4_archs, gpt_oss_archs, t5_archs}) {
      for (ArchDef& a : family()) out.push_back(std::move(a));
    }
    return out;
  }();
  return archs;
}

}  // namespace

const ArchDef* find_arch(const std::string& hf_class) {
  for (const ArchDef& a : all_archs()) {
    for (const char* c : a.hf_classes) {
      if (hf_class == c) return &a;
    }
  }
  return nullptr;
}

const ArchDef* find_gguf_arch(const std::string& gguf_arch) {
  for (const ArchDef& a : all_archs()) {
    if (gguf_arch == a.gguf_arch) return &a;
  }
  return nullptr;
}

std::vector<std::string> supported_classes() {
  std::vector<std::string> out;
  for (const ArchDef& a : all_archs()) out.insert(out.end(), a.hf_classes.begin(), a.hf_classes.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferrite::convert
