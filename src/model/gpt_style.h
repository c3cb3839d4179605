// The decoders of the GPT line that differ from gpt2 only by options and by
// which tensors their files hold (phi2, starcoder, bloom, mpt, refact, jais,
// qwen, codeshell, chatglm; each arch_<family>.cpp chooses the options):
//   x = tok_embd[t] (+ position_embd[p]) (then token_embd_norm)
//   sequential: x += attn(norm1(x)); x += ffn(norm2(x))
//   parallel:   h = norm1(x); x += attn(h) + ffn(h)       (phi2: one norm)
//   logits = output(norm(x)) (+ output.bias)
// Tensors bound when present: position_embd, token_embd_norm, attn_qkv or
// attn_q/k/v, every bias, ffn_gate (a gated feed-forward; otherwise
// down(act(up h))), output (tied to token_embd when absent).
// Position: RoPE (full or partial, either pairing), ALiBi
// (HParams::max_alibi_bias), learned positions, or a mix the file says.
#pragma once

#include <memory>

#include "model/architecture.h"
#include "model/hparams.h"

namespace ferrite::model {

struct GptStyleOptions {
  backend::NormKind norm = backend::NormKind::Layer;
  bool parallel = false;          // attention and feed-forward from one normed input (no ffn_norm)
  bool rope = false;              // rotary embedding (hp.rope.n_rot dimensions)
  bool neox = false;              // RoPE pairing: NeoX halves instead of adjacent pairs
  float alibi_default = 0.0f;     // max_alibi_bias when the file has no attention.max_alibi_bias key
  bool gelu = true;               // feed-forward activation: GELU (llama.cpp's f16 table), else SiLU
  bool fused_gate_up = false;     // ffn_up holds gate | up [n_embd, 2 n_ff]: down(silu(gate) * up) (chatglm)
  float attn_scale = 0.0f;        // score scale; 0: 1/sqrt(head_dim)
  float clamp_qkv = 0.0f;         // > 0: Q, K, V clipped to [-c, c] (mpt's clamp_kqv)
};

std::unique_ptr<Architecture> make_gpt_style(const gguf::File& file, HParams& hp, const GptStyleOptions& opt);

}  // namespace ferrite::model
