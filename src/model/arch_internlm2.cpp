// internlm2 (InternLM 2 / 2.5): the Llama decoder with adjacent-pair RoPE.
// The checkpoint's fused, head-grouped wqkv is split into attn_q, attn_k and
// attn_v by llama.cpp's converter, so the file holds the Llama layout.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_internlm2(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = false;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
