// The bert-line encoders (bert_style.h). Tensors bound when present: every
// bias, jina's attn_norm_2; jina's optional q/k LayerNorms are refused.
#include "model/bert_style.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/metadata.h"
#include "model/blocks.h"
#include "model/layer_rope.h"
#include "model/pooling.h"

namespace ferrite::model {
namespace {

class BertStyle : public Architecture {
 public:
  BertStyle(const gguf::File& file, HParams& hp, const BertStyleOptions& opt) : opt_(opt) {
    const WeightBinder b(file);
    const gguf::Metadata md(file);
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_kv = hp.n_embd_kv();
    if (n_q != n_embd || n_kv != n_embd) {
      throw ModelError(file.path() + ": " + hp.arch + " needs n_head * head_dim == n_embd");
    }
    const std::string pooling_key = md.arch_key("pooling_type");
    if (opt.pooling_required && !md.has(pooling_key)) {
      throw ModelError(file.path() + ": " + pooling_key + " is required but missing");
    }
    hp.pooling = pooling_from_gguf(md.opt_uint(pooling_key).value_or(0), file.path());
    if (hp.pooling == Pooling::Rank) bind_head(file, b, hp);
    hp.rope.neox = true;  // nomic-bert (llama.cpp's NeoX pairing); unused by the others
    tok_embd_ = bind_token_embd(b, hp);
    const gguf::TensorInfo& types = file.tensor("token_types.weight");
    type_embd_ = b.require("token_types.weight", {n_embd, types.ne[1]});
    hp.n_token_types = types.ne[1];
    if (opt.positions == BertPositions::Learned) {
      const gguf::TensorInfo& pos = file.tensor("position_embd.weight");
      pos_embd_ = b.require("position_embd.weight", {n_embd, pos.ne[1]});
    }
    embd_norm_ = bind_norm(b, "token_embd_norm", n_embd);

    layers_.resize(static_cast<size_t>(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
      Layer& L = layers_[static_cast<size_t>(il)];
      auto name = [il](const char* s) { return WeightBinder::layer_name(il, s); };
      if (opt.fused_qkv) {
        L.attn.wqkv = b.require(name("attn_qkv.weight"), {n_embd, 3 * n_embd});
        L.attn.bqkv = b.optional_vec(name("attn_qkv.bias"), 3 * n_embd);
      } else {
        L.attn.wq = b.require(name("attn_q.weight"), {n_embd, n_embd});
        L.attn.bq = b.optional_vec(name("attn_q.bias"), n_embd);
        L.attn.wk = b.require(name("attn_k.weight"), {n_embd, n_embd});
        L.attn.bk = b.optional_vec(name("attn_k.bias"), n_embd);
        L.attn.wv = b.require(name("attn_v.weight"), {n_embd, n_embd});
        L.attn.bv = b.optional_vec(name("attn_v.bias"), n_embd);
      }
      for (const char* qk : {"attn_q_norm.weight", "attn_k_norm.weight"}) {
        if (file.find_tensor(name(qk)) != nullptr) {
          throw ModelError(file.path() + ": " + name(qk) + ": LayerNorms of q and k are not supported");
        }
      }
      L.attn.wo = b.require(name("attn_output.weight"), {n_embd, n_embd});
      L.attn.bo = b.optional_vec(name("attn_output.bias"), n_embd);
      L.attn_out_norm = bind_norm(b, name("attn_output_norm"), n_embd);
      if (file.find_tensor(name("attn_norm_2.weight")) != nullptr) L.attn_norm_2 = bind_norm(b, name("attn_norm_2"), n_embd);
      const int64_t n_ff = file.tensor(name("ffn_up.weight")).ne[1];
      L.ffn.up = b.require(name("ffn_up.weight"), {n_embd, n_ff});
      L.ffn.up_b = b.optional_vec(name("ffn_up.bias"), n_ff);
      if (opt.gated_ffn) {
        L.ffn.gate = b.require(name("ffn_gate.weight"), {n_embd, n_ff});
        L.ffn.gate_b = b.optional_vec(name("ffn_gate.bias"), n_ff);
      }
      L.ffn.down = b.require(name("ffn_down.weight"), {n_ff, n_embd});
      L.ffn.down_b = b.optional_vec(name("ffn_down.bias"), n_embd);
      L.out_norm = bind_norm(b, name("layer_output_norm"), n_embd);
    }
    hp_ = hp;
  }

  bool is_encoder() const override { return true; }

  // cls (+ cls.output) as llama.cpp c392e50 names and shapes them; the bias
  // of each product is required with it (llama.cpp asserts both for rank).
  void bind_head(const gguf::File& file, const WeightBinder& b, const HParams& hp) {
    const int64_t n_embd = hp.n_embd;
    if (opt_.head == BertStyleOptions::Head::None) {
      throw ModelError(file.path() + ": " + hp.arch + " has no classification head, so pooling_type 4 (rank) is not supported");
    }
    if (file.find_tensor("cls.weight") == nullptr) {
      throw ModelError(file.path() + ": pooling_type 4 (rank) needs the classification head cls.weight, which is missing");
    }
    const bool hidden = opt_.head == BertStyleOptions::Head::ClsHidden;
    const int64_t n_cls = hidden ? n_embd : 1;
    cls_ = b.require("cls.weight", {n_embd, n_cls});
    cls_b_ = b.require_vec("cls.bias", n_cls);
    if (hidden) {
      if (file.find_tensor("cls.output.weight") == nullptr) {
        throw ModelError(file.path() + ": cls.weight gives " + std::to_string(n_cls) +
                         " values per sequence and cls.output.weight, which makes them one score, is missing");
      }
      cls_out_ = b.require("cls.output.weight", {n_embd, 1});
      cls_out_b_ = b.require_vec("cls.output.bias", 1);
    }
  }

  // The head on each sequence's first row (the runtime's out_rows): scores [n_out, 1].
  void classify(Step& s, Act x, float* scores) const {
    backend::Ops& o = s.ops();
    const int64_t n_out = s.batch.n_out;
    if (!cls_) throw InvalidArgument(hp_.arch + " model without a classification head asked for rank scores");
    const Act rows = o.buffer(Buf::Rows, n_out, hp_.n_embd);
    o.gather_rows(x, rows);
    const Act out = o.output(Buf::Hidden, scores, n_out, 1);
    if (cls_out_) {
      const Act h = o.buffer(Buf::H, n_out, hp_.n_embd);
      o.linear(cls_, cls_b_, rows, h);
      o.softcap(h, 1.0f);  // tanh
      o.linear(cls_out_, cls_out_b_, h, out);
    } else {
      o.linear(cls_, cls_b_, rows, out);
      o.softcap(out, 1.0f);
    }
  }

  void forward(Step& s, float* states) const override {
    const int64_t n = s.batch.n_tokens, n_embd = hp_.n_embd;
    backend::AttentionSpec spec;
    if (opt_.positions == BertPositions::Rope) spec.rope = s.prepare_rope(rope_config(hp_.rope, nullptr));
    if (opt_.positions == BertPositions::Alibi) spec.max_alibi_bias = opt_.max_alibi_bias;
    Act x = s.ops().buffer(Buf::X, n, n_embd);
    {
      backend::Ops& o = s.ops();
      const Act y = o.buffer(Buf::Y, n, n_embd);
      o.embed(tok_embd_, Ids::Tokens, x);
      // Each token's type (segment id; type 0 for all unless the batch gives
      // them), its row looked up like a token.
      o.embed(type_embd_, Ids::Types, y);
      o.add(x, y);
      if (opt_.positions == BertPositions::Learned) add_position_embeddings(s, pos_embd_, x);
      o.norm(NormKind::Layer, x, embd_norm_, x);
    }
    const FfnKind ffn = opt_.gelu ? FfnKind::GeluF16 : FfnKind::SwiGlu;
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      s.enter_layer(il, x);
      backend::Ops& o = s.ops();
      const Layer& L = layers_[static_cast<size_t>(il)];
      const Act y = o.buffer(Buf::Y, n, n_embd);
      spec.layer = il;
      spec.w = &L.attn;
      o.encoder_attention(spec, x, y);
      if (L.attn_norm_2.w) {
        // jina: ln(ln(x + a) + x), the layer input added twice.
        o.add(y, x);
        o.norm(NormKind::Layer, y, L.attn_out_norm, y);
        o.add(x, y);
        o.norm(NormKind::Layer, x, L.attn_norm_2, x, ffn_input(L.ffn));
      } else {
        o.add(x, y);
        o.norm(NormKind::Layer, x, L.attn_out_norm, x, ffn_input(L.ffn));
      }
      o.feed_forward({&L.ffn, ffn}, x, y);
      o.add(x, y);
      o.norm(NormKind::Layer, x, L.out_norm, x);
    }
    if (s.batch.n_out > 0 && s.batch.classify) {
      classify(s, x, states);
    } else if (s.batch.n_out > 0) {
      s.ops().gather_rows(x, s.ops().output(Buf::Hidden, states, s.batch.n_out, n_embd));
    }
  }

 private:
  struct Layer {
    AttentionWeights attn;
    Norm attn_out_norm, attn_norm_2, out_norm;
    FfnWeights ffn;
  };

  BertStyleOptions opt_;
  HParams hp_;
  Tensor tok_embd_, type_embd_, pos_embd_;
  Tensor cls_, cls_b_, cls_out_, cls_out_b_;  // the classification head (rank pooling)
  Norm embd_norm_;
  std::vector<Layer> layers_;
};

}  // namespace

std::unique_ptr<Architecture> make_bert_style(const gguf::File& file, HParams& hp, const BertStyleOptions& opt) {
  return std::make_unique<BertStyle>(file, hp, opt);
}

}  // namespace ferrite::model
