// t5 (T5, flan-t5: encoder-decoder) and t5encoder (the encoder alone,
// embeddings), in llama.cpp c392e50's layout (enc.blk.N.*, dec.blk.N.*):
//   encoder: x = tok_embd[t]
//            per layer: x += attn(rms(x)); x += ffn(rms(x))
//            states = rms(x) (enc.output_norm)
//   decoder: x = tok_embd[t]
//            per layer: x += self_attn(rms(x)); x += cross_attn(rms(x), states);
//                       x += ffn(rms(x))
//            logits = output(rms(x)) (dec.output_norm; output.weight, or the
//            token table when absent, without T5's d_model^-0.5 factor, as
//            llama.cpp c392e50)
// RMSNorm without bias; attention without the 1/sqrt(head_dim) scale; no
// position embeddings but a relative position bias (attn_rel_b [n_head,
// buckets]) added to the scores, bucketed bidirectionally in the encoder and
// causally in the decoder's self-attention (none in the cross-attention); a
// layer without its own attn_rel_b uses layer 0's. Feed-forward: ReLU
// (t5), or gated GELU when the encoder has ffn_gate (flan-t5), the decoder's
// kind following the encoder's as in llama.cpp.
#include <string>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "gguf/metadata.h"
#include "model/arch_factories.h"
#include "model/blocks.h"
#include "model/pooling.h"

namespace ferrite::model {
namespace {

// attn_rel_b [n_head, n_buckets] as host f32 [n_buckets, n_head]; empty when absent.
std::vector<float> read_rel_bias(const gguf::File& file, const std::string& name, int64_t n_head, int64_t n_buckets) {
  const gguf::TensorInfo* t = file.find_tensor(name);
  if (t == nullptr) return {};
  if (t->ne[0] != n_head || t->ne[1] != n_buckets || t->ne[2] != 1 || t->ne[3] != 1) {
    throw ModelError(file.path() + ": " + name + " must be [" + std::to_string(n_head) + ", " +
                     std::to_string(n_buckets) + "] (heads, relative position buckets)");
  }
  std::vector<float> out(static_cast<size_t>(n_head * n_buckets));
  if (t->type == TensorType::F32) {
    const auto* p = reinterpret_cast<const float*>(t->data);
    out.assign(p, p + out.size());
  } else if (t->type == TensorType::F16) {
    const auto* p = reinterpret_cast<const uint16_t*>(t->data);
    for (size_t i = 0; i < out.size(); ++i) out[i] = fp16_to_fp32(p[i]);
  } else {
    throw ModelError(file.path() + ": " + name + " must be f32 or f16");
  }
  return out;
}

class T5 : public Architecture {
 public:
  T5(const gguf::File& file, HParams& hp, bool encoder_only) : encoder_only_(encoder_only) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    if (hp.n_head_kv != hp.n_head) throw ModelError(file.path() + ": " + hp.arch + " needs as many KV heads as heads");
    const auto buckets = md.opt_uint(md.arch_key("attention.relative_buckets_count"));
    if (!buckets || *buckets < 4 || *buckets > 4096) {
      throw ModelError(file.path() + ": " + md.arch_key("attention.relative_buckets_count") +
                       " is required (4..4096 relative position buckets)");
    }
    n_buckets_ = static_cast<int64_t>(*buckets);
    hp.n_rel_buckets = n_buckets_;
    if (auto start = md.opt_uint(md.arch_key("decoder_start_token_id"))) {
      hp.decoder_start_token = static_cast<int32_t>(*start);
    }
    hp.pooling = pooling_from_gguf(md.opt_uint(md.arch_key("pooling_type")).value_or(0), file.path());
    if (hp.pooling == Pooling::Rank) throw ModelError(file.path() + ": " + hp.arch + " has no rank pooling");
    tok_embd_ = bind_token_embd(b, hp);
    enc_norm_ = bind_norm(b, "enc.output_norm", hp.n_embd);
    enc_ = bind_stack(file, b, hp, "enc.blk.", false);
    if (!encoder_only) {
      dec_ = bind_stack(file, b, hp, "dec.blk.", true);
      dec_norm_ = bind_norm(b, "dec.output_norm", hp.n_embd);
      output_ = b.optional("output.weight", {hp.n_embd, hp.n_vocab});
      if (!output_) output_ = tok_embd_;
      if (hp.decoder_start_token >= hp.n_vocab) {
        throw ModelError(file.path() + ": decoder_start_token_id " + std::to_string(hp.decoder_start_token) +
                         " is outside the vocabulary");
      }
    }
    gated_ = static_cast<bool>(enc_.layers[0].ffn.gate);
    for (const Layer& L : enc_.layers) {
      if (static_cast<bool>(L.ffn.gate) != gated_) {
        throw ModelError(file.path() + ": " + hp.arch + ": some encoder layers have ffn_gate and some not");
      }
    }
    for (const Layer& L : dec_.layers) {
      if (L.ffn.gate && !gated_) {
        throw ModelError(file.path() + ": " + hp.arch + ": decoder ffn_gate without the encoder's");
      }
    }
    hp_ = hp;
  }

  bool is_encoder() const override { return encoder_only_; }
  bool has_encoder() const override { return !encoder_only_; }

  void forward(Step& s, float* out) const override {
    if (encoder_only_ || s.batch.encode) {
      encode(s, out);
    } else {
      decode(s, out);
    }
  }

 private:
  struct Layer {
    Norm attn_norm, cross_norm, ffn_norm;
    AttentionWeights attn, cross;
    FfnWeights ffn;
    std::vector<float> rel_b;  // [n_buckets, n_head], or empty: layer 0's
  };
  struct Stack {
    std::vector<Layer> layers;
    const float* rel_bias(int64_t il) const {
      const Layer& L = layers[static_cast<size_t>(il)];
      return (L.rel_b.empty() ? layers[0].rel_b : L.rel_b).data();
    }
  };

  Stack bind_stack(const gguf::File& file, const WeightBinder& b, const HParams& hp, const std::string& prefix,
                   bool decoder) const {
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q();
    Stack st;
    st.layers.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = st.layers[static_cast<size_t>(il)];
      const std::string p = prefix + std::to_string(il) + ".";
      L.attn_norm = bind_norm(b, p + "attn_norm", n_embd);
      L.attn.wq = b.require(p + "attn_q.weight", {n_embd, n_q});
      L.attn.wk = b.require(p + "attn_k.weight", {n_embd, n_q});
      L.attn.wv = b.require(p + "attn_v.weight", {n_embd, n_q});
      L.attn.wo = b.require(p + "attn_o.weight", {n_q, n_embd});
      L.rel_b = read_rel_bias(file, p + "attn_rel_b.weight", hp.n_head, n_buckets_);
      if (il == 0 && L.rel_b.empty()) throw ModelError(file.path() + ": " + p + "attn_rel_b.weight is required");
      if (decoder) {
        L.cross_norm = bind_norm(b, p + "cross_attn_norm", n_embd);
        L.cross.wq = b.require(p + "cross_attn_q.weight", {n_embd, n_q});
        L.cross.wk = b.require(p + "cross_attn_k.weight", {n_embd, n_q});
        L.cross.wv = b.require(p + "cross_attn_v.weight", {n_embd, n_q});
        L.cross.wo = b.require(p + "cross_attn_o.weight", {n_q, n_embd});
      }
      L.ffn_norm = bind_norm(b, p + "ffn_norm", n_embd);
      const gguf::TensorInfo* up = file.find_tensor(p + "ffn_up.weight");
      if (up == nullptr) throw ModelError(file.path() + ": " + p + "ffn_up.weight is missing");
      const int64_t n_ff = up->ne[1];
      L.ffn.up = b.require(p + "ffn_up.weight", {n_embd, n_ff});
      L.ffn.gate = b.optional(p + "ffn_gate.weight", {n_embd, n_ff});
      L.ffn.down = b.require(p + "ffn_down.weight", {n_ff, n_embd});
    }
    return st;
  }

  backend::AttentionSpec self_spec(const Stack& st, int64_t il) const {
    backend::AttentionSpec spec;
    spec.layer = il;
    spec.w = &st.layers[static_cast<size_t>(il)].attn;
    spec.scale = 1.0f;
    spec.rel_bias = st.rel_bias(il);
    spec.n_rel_buckets = n_buckets_;
    return spec;
  }

  // The feed-forward of layer L as llama.cpp runs it: the encoder's kind for both stacks.
  backend::FfnSpec ffn_spec(const Layer& L) const {
    // A decoder layer of a gated model without its gate runs as plain GELU (FfnKind's no-gate form).
    return {&L.ffn, gated_ ? FfnKind::GeluF16 : FfnKind::Relu};
  }

  void encode(Step& s, float* states) const {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = enc_.layers[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      o.norm(NormKind::Rms, x, L.attn_norm, h, &L.attn.wq);
      o.encoder_attention(self_spec(enc_, il), h, y);
      o.add(x, y);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
      o.feed_forward(ffn_spec(L), h, y);
      o.add(x, y);
    }
    if (s.batch.n_out == 0) return;
    backend::Ops& o = s.ops();
    const Act rows = o.output(Buf::Hidden, states, s.batch.n_out, n_embd);
    o.gather_rows(x, rows);
    o.norm(NormKind::Rms, rows, enc_norm_, rows);
  }

  void decode(Step& s, float* logits) const {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    s.ops().embed(tok_embd_, Ids::Tokens, x);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = dec_.layers[static_cast<size_t>(il)];
      const Act h = o.buffer(Buf::H, n, n_embd);
      const Act y = o.buffer(Buf::Y, n, n_embd);
      o.norm(NormKind::Rms, x, L.attn_norm, h, &L.attn.wq);
      o.attention(self_spec(dec_, il), h, y);
      o.add(x, y);
      o.norm(NormKind::Rms, x, L.cross_norm, h, &L.cross.wq);
      backend::AttentionSpec cross;
      cross.layer = il;
      cross.w = &L.cross;
      cross.scale = 1.0f;
      o.cross_attention(cross, h, y);
      o.add(x, y);
      o.norm(NormKind::Rms, x, L.ffn_norm, h, ffn_input(L.ffn));
      o.feed_forward(ffn_spec(L), h, y);
      o.add(x, y);
    }
    output_head(s, hp_, NormKind::Rms, dec_norm_, output_, Tensor{}, x, logits);
  }

  bool encoder_only_;
  bool gated_ = false;
  int64_t n_buckets_ = 0;
  HParams hp_;
  Tensor tok_embd_, output_;
  Norm enc_norm_, dec_norm_;
  Stack enc_, dec_;
};

}  // namespace

std::unique_ptr<Architecture> make_t5(const gguf::File& file, HParams& hp) {
  return std::make_unique<T5>(file, hp, false);
}

std::unique_ptr<Architecture> make_t5encoder(const gguf::File& file, HParams& hp) {
  return std::make_unique<T5>(file, hp, true);
}

}  // namespace ferrite::model
