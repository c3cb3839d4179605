// The architecture families (one arch_*.cpp each): one line per
// `general.architecture` name and the factory that builds it. The line
// declares the factory and lists it in the registry (registry.cpp). Adding
// a family: write arch_<family>.cpp with its factory, add its line here.
#pragma once

#include <memory>

#include "model/architecture.h"

#define FERRITE_ARCHITECTURES(X) \
  X("llama", make_llama)         \
  X("qwen2", make_qwen2)         \
  X("qwen2moe", make_qwen2moe)   \
  X("qwen3", make_qwen3)         \
  X("qwen3moe", make_qwen3)      \
  X("gemma", make_gemma)         \
  X("gemma2", make_gemma2)       \
  X("gemma3", make_gemma3)       \
  X("phi3", make_phi3)           \
  X("gpt2", make_gpt2)           \
  X("gptneox", make_gptneox)     \
  X("starcoder2", make_starcoder2) \
  X("falcon", make_falcon)       \
  X("bert", make_bert)           \
  X("t5", make_t5)               \
  X("t5encoder", make_t5encoder) \
  X("granite", make_granite)     \
  X("granitemoe", make_granitemoe) \
  X("minicpm", make_minicpm)     \
  X("minicpm3", make_minicpm3)   \
  X("olmo2", make_olmo2)         \
  X("olmoe", make_olmoe)         \
  X("command-r", make_command_r) \
  X("cohere2", make_cohere2)     \
  X("exaone", make_exaone)       \
  X("internlm2", make_internlm2) \
  X("xverse", make_xverse)       \
  X("orion", make_orion)         \
  X("baichuan", make_baichuan)   \
  X("stablelm", make_stablelm)   \
  X("olmo", make_olmo)           \
  X("nemotron", make_nemotron)   \
  X("plamo", make_plamo)         \
  X("deepseek", make_deepseek)   \
  X("deepseek2", make_deepseek2) \
  X("phi2", make_phi2)           \
  X("starcoder", make_starcoder) \
  X("bloom", make_bloom)         \
  X("mpt", make_mpt)             \
  X("refact", make_refact)       \
  X("jais", make_jais)           \
  X("qwen", make_qwen1)          \
  X("codeshell", make_codeshell) \
  X("chatglm", make_chatglm)     \
  X("gptj", make_gptj)           \
  X("phimoe", make_phimoe)       \
  X("dbrx", make_dbrx)           \
  X("qwen2vl", make_qwen2vl)     \
  X("nomic-bert", make_nomic_bert) \
  X("jina-bert-v2", make_jina_bert_v2) \
  X("smollm3", make_smollm3)     \
  X("glm4", make_glm4)           \
  X("glm4moe", make_glm4moe)     \
  X("ernie4_5", make_ernie4_5)   \
  X("ernie4_5-moe", make_ernie4_5_moe) \
  X("hunyuan-moe", make_hunyuan_moe) \
  X("gpt-oss", make_gpt_oss)     \
  X("llama4", make_llama4)       \
  X("mamba2", make_mamba2)       \
  X("granitehybrid", make_granitehybrid) \
  X("rwkv6", make_rwkv6)         \
  X("rwkv6qwen2", make_rwkv6qwen2) \
  X("rwkv7", make_rwkv7)

namespace ferrite::model {

#define FERRITE_DECLARE_FACTORY(name, factory) \
  std::unique_ptr<Architecture> factory(const gguf::File& file, HParams& hp);
FERRITE_ARCHITECTURES(FERRITE_DECLARE_FACTORY)
#undef FERRITE_DECLARE_FACTORY

}  // namespace ferrite::model
