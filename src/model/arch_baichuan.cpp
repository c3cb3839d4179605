// baichuan (Baichuan 1/2 7B): the Llama decoder (adjacent-pair RoPE, SwiGLU;
// llama.cpp's converter splits W_pack into attn_q/k/v). llama.cpp tells the
// 13B models apart by their 40 layers: those use ALiBi instead of RoPE,
// which this family does not implement, so a 40-layer file is refused.
#include "core/error.h"
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_baichuan(const gguf::File& file, HParams& hp) {
  if (hp.n_layer == 40) {
    throw ModelError(file.path() + ": baichuan 13B (40 layers, ALiBi attention) is not supported; 7B is");
  }
  DecoderOptions opt;
  opt.neox_rope = false;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
