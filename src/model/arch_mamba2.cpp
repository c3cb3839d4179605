// mamba2 (Mamba-2, state-spaces/mamba2-*, Mamba-Codestral): every layer is
//   x += mixer(rms_norm(x))
// with the Mamba-2 mixer (backend::SsmSpec: in_proj to z | xBC | dt, causal
// depthwise conv + SiLU, the selective scan with a scalar decay per head and
// B/C shared per group, D skip, the gated grouped RMSNorm, out_proj), no
// attention and no feed-forward; then the RMS-normed output head (tied to
// the token table when the file has no output.weight). The runtime keeps
// each sequence's conv and scan state (src/runtime/recurrent_state.h).
#include <vector>

#include "model/arch_factories.h"
#include "model/bind_layer.h"
#include "model/blocks.h"
#include "model/ssm_block.h"

namespace ferrite::model {
namespace {

class Mamba2 : public Architecture {
 public:
  Mamba2(const gguf::File& file, HParams& hp) {
    const WeightBinder b(file);
    if (hp.ssm_d_state <= 0) throw ModelError(file.path() + ": mamba2 needs the ssm.* keys");
    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", hp.n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    hp.recurrent_layers.assign(static_cast<size_t>(hp.n_layer), true);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      L.norm = bind_norm(b, WeightBinder::layer_name(il, "attn_norm"), hp.n_embd);
      L.ssm = bind_ssm(b, hp, il);
    }
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override { forward_hidden(s, logits, nullptr); }

  bool has_hidden_states() const override { return true; }
  void forward_hidden(Step& s, float* logits, float* hidden) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      o.norm(NormKind::Rms, x, L.norm, h, &L.ssm.in);
      o.ssm(ssm_spec(hp_, il, L.ssm), h, x, /*accumulate=*/true);
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits, hidden);
  }

 private:
  struct Layer {
    Norm norm;
    SsmWeights ssm;
  };
  HParams hp_;
  Tensor tok_embd_, output_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_mamba2(const gguf::File& file, HParams& hp) {
  return std::make_unique<Mamba2>(file, hp);
}

}  // namespace ferrite::model
