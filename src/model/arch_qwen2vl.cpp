// qwen2vl: the language model of Qwen2-VL. qwen2's layout (Q/K/V biases,
// NeoX pairs) with multimodal RoPE: qwen2vl.rope.dimension_sections (4
// values, required as llama.cpp requires them) splits each head's rotary
// pairs into temporal, height, width and extra sections, each rotated by its
// own position component. ferrite feeds text only, where llama.cpp gives a
// token all four components equal to its position (its Qwen2-VL example's
// text batches): every section then turns by the same angle p * base^(-2i/n_rot)
// as plain NeoX RoPE, so the family is qwen2's decoder once the sections
// are checked. Image positions (vision input) are not supported.
#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_qwen2vl(const gguf::File& file, HParams& hp) {
  const gguf::Metadata md(file);
  const std::string key = md.arch_key("rope.dimension_sections");
  const gguf::Value* v = file.find(key);
  if (v == nullptr) throw ModelError(file.path() + ": " + key + " is required but missing");
  std::vector<int64_t> sections;
  if (v->is_array()) {
    sections = md.int_array(key);
  } else {
    sections.assign(4, md.get_int(key));  // a scalar stands for all four (llama.cpp's get_key_or_arr)
  }
  if (sections.size() != 4) {
    throw ModelError(file.path() + ": " + key + " has " + std::to_string(sections.size()) + " values, not 4");
  }
  int64_t sum = 0;
  for (int64_t s : sections) {
    if (s < 0) throw ModelError(file.path() + ": " + key + " has a negative section");
    sum += s;
  }
  if (sum == 0 || sum > hp.head_dim / 2) {
    throw ModelError(file.path() + ": " + key + " covers " + std::to_string(sum) + " pairs of a head of " +
                     std::to_string(hp.head_dim));
  }
  return std::make_unique<Decoder>(file, hp, DecoderOptions{.neox_rope = true, .moe_norm_weights = true});
}

}  // namespace ferrite::model
