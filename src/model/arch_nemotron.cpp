// nemotron (NVIDIA Nemotron-3, Minitron): the pre-norm decoder with
// LayerNorms with biases (the checkpoint's layernorm1p: llama.cpp's converter
// stores w + 1, so the file holds plain LayerNorm weights), NeoX RoPE over
// the first rope.dimension_count dimensions of each head (partial rotary),
// optional attention biases, and a feed-forward without gate:
// down(relu(up h + b)^2) + b.
#include "model/arch_factories.h"
#include "model/decoder.h"

namespace ferrite::model {

std::unique_ptr<Architecture> make_nemotron(const gguf::File& file, HParams& hp) {
  DecoderOptions opt;
  opt.neox_rope = true;
  opt.layer_norm = true;
  opt.ffn_relu_sqr = true;
  return std::make_unique<Decoder>(file, hp, opt);
}

}  // namespace ferrite::model
