// rwkv6qwen2 (QRWKV6: Qwen2.5's layers with their attention replaced by an
// RWKV-6 time mix, llama.cpp's names and keys): after the token table, every
// layer is
//   x += time_mix(rms_norm(x)),  x += swiglu_ffn(rms_norm_2(x))
// and the output head is an RMSNorm (bias when the file has one) and a
// projection. The time mix is rwkv6's data-dependent mixes and decay with
// keys and values of attention.head_count_kv heads (grouped as in GQA),
// optional biases on r, k, v, k scaled by 1 - w, the gated linear attention
// (no bonus, scale 1/sqrt(head_size)), no group norm, a sigmoid gate
// (backend::RwkvSpec). One token-shift row per sequence (token_shift_count 1).
#include <vector>

#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"
#include "model/rwkv_block.h"

namespace ferrite::model {
namespace {

class Rwkv6Qwen2 : public Architecture {
 public:
  Rwkv6Qwen2(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    if (hp.rwkv_head_size <= 0) throw ModelError(file.path() + ": rwkv6qwen2 needs wkv.head_size");
    if (hp.rwkv_token_shift != 1) throw ModelError(file.path() + ": rwkv6qwen2 needs token_shift_count 1");
    const gguf::Metadata md(file);
    const int64_t n_head = hp.n_embd / hp.rwkv_head_size;
    kv_heads_ = static_cast<int64_t>(md.opt_uint(md.arch_key("attention.head_count_kv")).value_or(0));
    if (kv_heads_ == 0) kv_heads_ = n_head;
    if (kv_heads_ > n_head || n_head % kv_heads_ != 0) {
      throw ModelError(file.path() + ": rwkv6qwen2's attention.head_count_kv " + std::to_string(kv_heads_) +
                       " does not divide its " + std::to_string(n_head) + " heads");
    }
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", hp.n_embd);
    output_ = b.require("output.weight", {hp.n_embd, hp.n_vocab});
    hp.recurrent_layers.assign(static_cast<size_t>(hp.n_layer), true);
    const Rwkv6Dims d = read_rwkv6_dims(file, hp);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      L.norm = bind_norm(b, WeightBinder::layer_name(il, "attn_norm"), hp.n_embd);
      L.ffn_norm = bind_norm(b, WeightBinder::layer_name(il, "ffn_norm"), hp.n_embd);
      L.w = bind_rwkv6qwen2_layer(b, hp, d, kv_heads_, il, slices_);
      L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override { forward_hidden(s, logits, nullptr); }

  bool has_hidden_states() const override { return true; }
  void forward_hidden(Step& s, float* logits, float* hidden) const override {
    const int64_t n = s.batch.n_tokens, e = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, e);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      Act h = o.buffer(Buf::H, n, e);
      o.norm(NormKind::Rms, x, L.norm, h);
      o.rwkv_time_mix(rwkv_spec(hp_, 6, il, L.w, kv_heads_), h, x, Act{}, /*accumulate=*/true);
      h = o.buffer(Buf::H, n, e);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
      o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, x, /*accumulate=*/true);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits, hidden);
  }

 private:
  struct Layer {
    Norm norm, ffn_norm;
    RwkvWeights w;
    FfnWeights ffn;
  };
  int64_t kv_heads_ = 0;
  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  WeightSlices slices_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_rwkv6qwen2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Rwkv6Qwen2>(file, hp);
}

}  // namespace ferrite::model
