// llama4 (Meta's Llama 4 Scout and Maverick, text model; llama.cpp's
// LLM_ARCH_LLAMA4): a pre-RMSNorm decoder with adjacent-pair RoPE (Llama 3's
// rope_freqs when the file has them) where
//   - every kLlama4NoRopeStep-th layer (il + 1 a multiple of it) attends
//     without RoPE over the whole causal context, its queries scaled by the
//     attention temperature of their position (cpu/attention/attn_temperature.h:
//     attention.temperature_scale, default 0.1, and temperature_length, the
//     floor scale, default 8192);
//   - the other layers rotate q and k, norm each head of both without a
//     weight after RoPE (HF's Llama4TextL2Norm, an RMS norm with the model's
//     eps; off for 128 experts, Maverick, llama.cpp's rule) and attend only
//     within their chunk of attention.chunk_size positions (default 8192,
//     llama.cpp's fixed value; the key is ferrite's): the runtime's
//     KvView::mask_chunk;
//   - every interleave_moe_layer_step-th layer (il + 1 a multiple of it) has
//     experts: a sigmoid router, top-k on its logits, each chosen expert fed
//     its input times its weight (MoeWeights::weight_input), plus a shared
//     expert (ffn_*_shexp, expert_feed_forward_length wide) always added; the
//     other layers a SwiGLU MLP of feed_forward_length:
//   per layer: x += attn(rms_norm(x)); x += ffn(rms_norm'(x))
//   logits = output(rms_norm(x))
// The chunked layers are the model's layers of limited reach
// (HParams::swa_layers, reach() by chunks): the runtime's window cache keeps
// for them only the cells of the chunks their next queries are in.
#include <string>
#include <vector>

#include "core/error.h"
#include "model/arch_factories.h"
#include "model/bind_experts.h"
#include "model/bind_layer.h"
#include "model/blocks.h"

namespace ferrite::model {
namespace {

constexpr int64_t kDefaultChunk = 8192;     // llama.cpp's n_attn_chunk
constexpr float kDefaultTempFloor = 8192.0f;  // llama.cpp's n_attn_temp_floor_scale
constexpr float kDefaultTempScale = 0.1f;     // llama.cpp's f_attn_temp_scale
constexpr int64_t kMaverickExperts = 128;     // llama.cpp: no q/k norm with 128 experts

class Llama4 : public Architecture {
 public:
  Llama4(const gguf::File& file, HParams& hp) {
    const gguf::Metadata md(file);
    const std::string& path = file.path();
    auto key = [](const char* k) { return std::string("llama4.") + k; };
    const WeightBinder b(file);
    const int64_t n_embd = hp.n_embd;
    hp.rope.neox = false;
    hp.n_swa = 0;  // chunks, not a window
    const uint64_t moe_step = md.get_uint(key("interleave_moe_layer_step"));
    if (moe_step == 0 || moe_step > (uint64_t{1} << 20)) {  // beyond n_layer: no expert layer
      throw ModelError(path + ": llama4.interleave_moe_layer_step " + std::to_string(moe_step) + " is out of range");
    }
    moe_step_ = static_cast<int64_t>(moe_step);
    const uint64_t chunk = md.opt_uint(key("attention.chunk_size")).value_or(kDefaultChunk);
    if (chunk == 0 || chunk > (uint64_t{1} << 30)) {
      throw ModelError(path + ": llama4.attention.chunk_size " + std::to_string(chunk) + " is out of range");
    }
    hp.n_chunk = static_cast<int64_t>(chunk);
    hp.swa_layers.clear();
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers.push_back((il + 1) % kLlama4NoRopeStep != 0);
    temp_floor_ = md.opt_float(key("attention.temperature_length")).value_or(kDefaultTempFloor);
    temp_scale_ = md.opt_float(key("attention.temperature_scale")).value_or(kDefaultTempScale);
    if (!(temp_floor_ >= 1.0f && temp_floor_ <= 1e9f) || !(temp_scale_ >= 0.0f && temp_scale_ <= 1e3f)) {
      throw ModelError(path + ": llama4 attention temperature settings out of range");
    }
    qk_norm_ = hp.n_expert != kMaverickExperts;

    tok_embd_ = bind_token_embd(b, hp);
    output_norm_ = bind_norm(b, "output_norm", n_embd);
    output_ = bind_output_or_tied(b, hp, tok_embd_);
    rope_freqs_ = b.optional_vec("rope_freqs.weight", hp.rope.n_rot / 2);
    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) bind_layer(b, hp, il, md, path);
    hp_ = hp;
  }

  void forward(Step& s, float* logits) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    const int rope = s.prepare_rope(rope_config(hp_.rope, rope_freqs_ ? rope_freqs_.f32() : nullptr));
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const bool nope = (il + 1) % kLlama4NoRopeStep == 0;
      backend::AttentionSpec a = attention_spec(hp_, il, L.attn, nope ? backend::kNoRope : rope);
      if (nope) {
        a.temp_scale = temp_scale_;
        a.temp_floor = temp_floor_;
      } else {
        a.chunked = true;
        a.qk_unit_norm = qk_norm_;
      }
      o.norm(NormKind::Rms, x, L.attn_norm, h, qkv_input(L.attn));
      o.attention(a, h, x, /*accumulate=*/true);
      if (L.moe.gate_inp) {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, &L.moe.gate_exps);
        o.moe(L.moe, h, x, true);
      } else {
        o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
        o.feed_forward({&L.ffn, FfnKind::SwiGlu}, h, x, true);
      }
    }
    output_head(s, hp_, NormKind::Rms, output_norm_, output_, Tensor{}, x, logits);
  }

 private:
  struct Layer {
    Norm attn_norm, ffn_norm;
    AttentionWeights attn;
    FfnWeights ffn;  // dense layers
    MoeWeights moe;  // expert layers (gate_inp set)
  };

  void bind_layer(const WeightBinder& b, const HParams& hp, int64_t il, const gguf::Metadata& md,
                  const std::string& path) {
    Layer& L = layers_[static_cast<size_t>(il)];
    auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
    const int64_t n_embd = hp.n_embd;
    L.attn_norm = bind_norm(b, name("attn_norm"), n_embd);
    L.attn = bind_attention(b, hp, il, QkvLayout::Separate);
    L.ffn_norm = bind_norm(b, name("ffn_norm"), n_embd);
    if ((il + 1) % moe_step_ != 0) {
      L.ffn = bind_ffn(b, hp, il, FfnGate::Required);
      return;
    }
    L.moe = bind_experts(b, hp, il, /*norm_weights=*/false);
    L.moe.gating = backend::MoeGating::Sigmoid;
    L.moe.weight_input = true;
    const int64_t n_ff_sh = static_cast<int64_t>(md.get_uint("llama4.expert_feed_forward_length"));
    if (n_ff_sh != L.moe.up_exps.ne(1)) {
      throw ModelError(path + ": llama4.expert_feed_forward_length " + std::to_string(n_ff_sh) +
                       " differs from the experts' width " + std::to_string(L.moe.up_exps.ne(1)));
    }
    L.moe.shexp.gate = b.require(name("ffn_gate_shexp.weight"), {n_embd, n_ff_sh});
    L.moe.shexp.up = b.require(name("ffn_up_shexp.weight"), {n_embd, n_ff_sh});
    L.moe.shexp.down = b.require(name("ffn_down_shexp.weight"), {n_ff_sh, n_embd});
  }

  HParams hp_;
  int64_t moe_step_ = 1;
  float temp_floor_ = kDefaultTempFloor, temp_scale_ = kDefaultTempScale;
  bool qk_norm_ = true;
  Tensor tok_embd_, output_, rope_freqs_;
  Norm output_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_llama4(const gguf::File& file, HParams& hp) {
  return std::make_unique<Llama4>(file, hp);
}

}  // namespace ferrite::model
