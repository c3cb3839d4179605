// rwkv6 (RWKV-6 "Finch") and rwkv7 (RWKV-7 "Goose"): attention-free
// recurrent models. After the token table and a LayerNorm of it, every
// layer is
//   x += time_mix(layer_norm(x)),  x += channel_mix(layer_norm_2(x))
// and the output head is a LayerNorm and a projection. Both mixes read the
// previous token's normed input (the token shift: the runtime keeps each
// sequence's last rows and wkv matrices, src/runtime/recurrent_state.h).
//   rwkv6's time mix: data-dependent lerps (a LoRA of h + sx lerp_x gives
//   each of w, k, v, r, g its own mix), r, k, v, silu(gate) projections, the
//   decay w = exp(-exp(decay + LoRA(xw))), the wkv6 recurrence with the bonus
//   u (time_mix_first), a per-head LayerNorm, the gate, the output
//   projection; every rescale_every_n_layers layers x is halved.
//   rwkv7's: plain lerps for r, w, k, v, a, g; w = exp(-e^-0.5
//   sigmoid(w0 + LoRA_tanh(xw))); the value residual to layer 0's values
//   v += (v_first - v) sigmoid(v0 + LoRA(xv)); a = sigmoid(a0 + LoRA(xa));
//   kk = L2-normed (k k_k) per head, k *= 1 + (a - 1) k_a; the generalized
//   delta rule (backend::RwkvSpec), the per-head LayerNorm, the bonus
//   (sum r k r_k) v, the gate LoRA (sigmoid inside) when present.
//   The channel mix: relu(W_k xk)^2 through W_v; rwkv6 gates it by sigmoid(W_r xr).
// llama.cpp's names and keys (llama-arch.cpp, llama-model.cpp).
#include <vector>

#include "model/arch_factories.h"
#include "model/blocks.h"
#include "model/rwkv_block.h"

namespace ferrite::model {
namespace {

class Rwkv : public Architecture {
 public:
  Rwkv(const gguf::File& file, HParams& hp, int version) : version_(version) {
    const WeightBinder b(file);
    if (hp.rwkv_head_size <= 0) throw ModelError(file.path() + ": " + hp.arch + " needs wkv.head_size");
    if (hp.rwkv_token_shift != 2) throw ModelError(file.path() + ": " + hp.arch + " needs token_shift_count 2");
    tok_embd_ = bind_token_embd(b, hp);
    tok_norm_ = bind_norm(b, "token_embd_norm", hp.n_embd);
    output_norm_ = bind_norm(b, "output_norm", hp.n_embd);
    output_ = b.require("output.weight", {hp.n_embd, hp.n_vocab});
    hp.recurrent_layers.assign(static_cast<size_t>(hp.n_layer), true);
    Rwkv6Dims d6;
    Rwkv7Dims d7;
    if (version == 6) {
      d6 = read_rwkv6_dims(file, hp);
      rescale_every_ = d6.rescale_every;
    } else {
      d7 = read_rwkv7_dims(file, hp);
    }
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      L.norm = bind_norm(b, WeightBinder::layer_name(il, "attn_norm"), hp.n_embd);
      L.norm2 = bind_norm(b, WeightBinder::layer_name(il, "attn_norm_2"), hp.n_embd);
      L.w = version == 6 ? bind_rwkv6_layer(b, hp, d6, il, slices_) : bind_rwkv7_layer(b, hp, d7, il, slices_);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override { forward_hidden(s, logits, nullptr); }

  bool has_hidden_states() const override { return true; }
  void forward_hidden(Step& s, float* logits, float* hidden) const override {
    const int64_t n = s.batch.n_tokens, e = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, e);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    s.ops().norm(NormKind::Layer, x, tok_norm_, x);
    Act v_first{};
    backend::Ops* v_ops = nullptr;
    std::vector<float> staged;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      if (version_ == 7) carry_v_first(o, v_ops, v_first, staged, n);
      const Layer& L = layers_[static_cast<size_t>(il)];
      const RwkvSpec spec = rwkv_spec(hp_, version_, il, L.w);
      Act h = o.buffer(Buf::H, n, e);
      o.norm(NormKind::Layer, x, L.norm, h);
      o.rwkv_time_mix(spec, h, x, v_first, /*accumulate=*/true);
      h = o.buffer(Buf::H, n, e);
      o.norm(NormKind::Layer, x, L.norm2, h);
      o.rwkv_channel_mix(spec, h, x, /*accumulate=*/true);
      if (rescale_every_ > 0 && (il + 1) % rescale_every_ == 0) o.scale(x, 0.5f);
    }
    output_head(s, hp_, NormKind::Layer, output_norm_, output_, Tensor{}, x, logits, hidden);
  }

 private:
  // rwkv7's layer-0 values (Buf::F) follow the layers to another backend (partial offload).
  void carry_v_first(backend::Ops& o, backend::Ops*& v_ops, Act& v_first, std::vector<float>& staged,
                     int64_t n) const {
    if (v_ops == &o) return;
    const Act next = o.buffer(Buf::F, n, hp_.n_embd);
    if (v_ops != nullptr) {
      staged.resize(static_cast<size_t>(v_first.size()));
      v_ops->to_host(v_first, staged.data());
      o.from_host(staged.data(), next);
    }
    v_first = next;
    v_ops = &o;
  }

  struct Layer {
    Norm norm, norm2;
    RwkvWeights w;
  };
  int version_;
  int64_t rescale_every_ = 0;
  HParams hp_;
  Tensor tok_embd_, output_;
  Norm tok_norm_, output_norm_;
  WeightSlices slices_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_rwkv6(const gguf::File& file, HParams& hp) {
  return std::make_unique<Rwkv>(file, hp, 6);
}

std::unique_ptr<Architecture> make_rwkv7(const gguf::File& file, HParams& hp) {
  return std::make_unique<Rwkv>(file, hp, 7);
}

}  // namespace ferrite::model
