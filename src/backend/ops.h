// The operations an architecture's forward pass is written in (model/arch_*.cpp),
// implemented once per device kind: the CPU (cpu/backend) with the CPU kernels
// and thread pool, CUDA (cuda/backend) with the GPU kernels and their fusions.
//
// Activations are row-major f32 matrices [rows, cols] in the memory of the
// backend that made them (Act); a forward pass names them by Buf, so that a
// backend can keep each at a stable address from step to step (the CUDA
// backend replays captured decode steps) and remember what it derived from
// one (the 8-bit or f16 form a product reads). The model never reads an Act's
// data: values reach the host through output() only.
//
// Operations are issued in order and may run asynchronously; a backend's
// end_step() (backend.h) waits for them. Granularity: products, norms,
// element-wise ops and row gathers are single operations; self-attention
// (projections, per-head norms, RoPE, the KV cache write, attention over the
// cache with its masks and soft-cap, the output projection), the feed-forward
// variants and the mixture of experts are one operation each, so that a
// backend fuses inside them as it can (the CUDA backend: Q|K|V + RoPE + K/V
// store in one launch, the attention writing the 8-bit input of the output
// product, SwiGLU writing the down product's).
#pragma once

#include <cstdint>

#include "backend/weight.h"
#include "core/error.h"
#include "cpu/ops/rope.h"

namespace ferrite::backend {

// The named activation buffers of a forward pass.
enum class Buf : uint8_t {
  X,       // the residual stream [n_tokens, n_embd]
  H,       // a normed input [n_tokens, n_embd]
  H2,      // a second normed input (falcon's attn_norm_2)
  Y,       // what a block adds to the residual stream
  F,       // a second block output (parallel attention and feed-forward)
  Rows,    // the output rows [n_out, n_embd]
  Logits,  // [n_out, n_vocab], delivered to the host (output())
  Hidden,  // [n_out, n_embd] hidden states, delivered to the host
  kCount
};
constexpr int kBufCount = static_cast<int>(Buf::kCount);

struct Act {
  float* data = nullptr;  // in the owning backend's memory
  int64_t rows = 0, cols = 0;
  Buf buf = Buf::X;
  int64_t size() const { return rows * cols; }
};

// The model's sizes the operations need (model::dims_of makes it from the hyperparameters).
struct ModelDims {
  int64_t n_embd = 0, n_layer = 0, n_vocab = 0;
  int64_t n_head = 0, n_head_kv = 0, head_dim = 0;
  int64_t n_expert = 0, n_expert_used = 0;
  float norm_eps = 1e-5f, norm_rms_eps = 1e-5f;
  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
};

enum class NormKind { Rms, Layer };

// Which rows of a table embed() looks up for the batch's tokens: their ids,
// their positions (learned position embeddings), or their types (bert's
// token types: ForwardBatch::types, row 0 for every token without them).
enum class Ids { Tokens, Positions, Types };

// The RoPE of a step: its parameters, and the tables of the batch's positions
// that prepare_rope() makes from them (one per set of parameters a model uses).
using RopeConfig = cpu::RopeConfig;
constexpr int kNoRope = -1;

struct AttentionSpec {
  int64_t layer = 0;                       // the KV cache layer
  const AttentionWeights* w = nullptr;
  int rope = kNoRope;                      // a prepare_rope() table, or kNoRope
  bool sliding = false;                    // the sliding-window mask (KvView::mask_swa)
  bool chunked = false;                    // the chunked-attention mask (KvView::mask_chunk; llama4)
  // A layer of limited reach (sliding or chunked): with a window cache
  // (KvView::swa) its cells are the window's.
  bool windowed() const { return sliding || chunked; }
  // llama4: q and k of each head RMS-normed without a weight (eps
  // ModelDims::norm_rms_eps) after RoPE, before the cache (its "L2 norm").
  bool qk_unit_norm = false;
  // hunyuan-moe: the weighted per-head q/k norms (AttentionWeights::q_norm,
  // k_norm) after RoPE instead of before it.
  bool qk_norm_after_rope = false;
  // > 0 (llama4's NoPE layers): each token's q scaled by its attention
  // temperature, cpu::attn_temperature(pos, temp_floor, temp_scale).
  float temp_scale = 0.0f;
  float temp_floor = 0.0f;
  float scale = 0.0f;                      // score scale; 0: 1/sqrt(head_dim)
  float softcap = 0.0f;                    // attention logit soft-cap; 0: none
  // ALiBi (cpu/attention/alibi.h): head h adds alibi_slope(h, n_head, max_alibi_bias)
  // times the mask, which then holds -|q_pos - k_pos| for visible cells
  // (KvView::mask, made so by the runtime for models with
  // HParams::max_alibi_bias > 0); 0: none. Keys then carry no position.
  float max_alibi_bias = 0.0f;
  // > 0: the Q, K and V projections (with their biases) clipped to
  // [-clamp_qkv, clamp_qkv] before RoPE and the cache (mpt's clamp_kqv).
  float clamp_qkv = 0.0f;
  // T5's relative position bias (model/arch_t5.cpp): host f32 [n_rel_buckets,
  // n_head], llama.cpp's attn_rel_b; head h's score of key position k for
  // query position q gains rel_bias[bucket(k - q) * n_head + h]
  // (cpu/attention/rel_pos_bias.h: causal buckets in attention(), whose mask then holds
  // -(q - k) for visible cells as for ALiBi; bidirectional ones in
  // encoder_attention()). null: none.
  const float* rel_bias = nullptr;
  int64_t n_rel_buckets = 0;
};

// Multi-head latent attention of one layer (MlaWeights, weight.h). The
// layer's cache holds one row per cell of kv_lora + rope values, [k_pe
// rotated | c normed], as K and as V (ModelDims: one KV head of that size),
// so that the runtime's cache and its context shift (the first n_rot values
// of the row rotate) serve it unchanged.
struct MlaSpec {
  int64_t layer = 0;
  const MlaWeights* w = nullptr;
  int rope = kNoRope;               // the table of the rotary parts
  int64_t n_head = 0, nope = 0, n_rot = 0, kv_lora = 0, v_dim = 0;
  float scale = 0.0f;               // score scale (YaRN's mscale^2 / sqrt(nope + rope))
};

enum class FfnKind {
  SwiGlu,       // down(silu(gate h) * up h), or down(silu(up h)) without gate
  GeluF16,      // down(gelu(gate h) * up h), or down(gelu(up h)); GELU through llama.cpp's f16 table; biases
  FusedSwiGlu,  // up holds gate | up side by side [n_embd, 2 n_ff] (phi3): down(silu(first) * second)
  ReluSqr,      // down(relu(up h)^2), no gate; biases (nemotron)
  Relu,         // down(relu(up h)), no gate; biases (t5)
};

struct FfnSpec {
  const FfnWeights* w = nullptr;
  FfnKind kind = FfnKind::SwiGlu;
};

// A Mamba-2 mixer layer (the selective state-space scan, SSD form). For
// each token t of the batch, in batch order, with the state of its
// sequence (KvView::rs, the recurrent state slot of each token):
//   z | xBC | dt = W_in h_t
//   xBC = silu(conv1d(the last d_conv - 1 inputs of the sequence, xBC) + conv_b)
//   x | B | C = xBC         (x [n_head, head_dim], B and C [n_group, d_state])
//   dt_h = softplus(dt_h + dt_b_h);  head h reads group h / (n_head / n_group)
//   S_h = exp(dt_h A_h) S_h + dt_h x_h B_g^T      (S_h [head_dim, d_state])
//   y_h = S_h C_g + D_h x_h
//   out = W_out (rms_norm per group(y * silu(z)) * norm)
// The conv state holds the last d_conv - 1 xBC inputs [d_conv - 1, conv_ch],
// the ssm state S [n_head, head_dim, d_state], both f32 and updated in place.
struct SsmSpec {
  int64_t layer = 0;                       // the layer of KvView::rs
  const SsmWeights* w = nullptr;
  int64_t d_conv = 0, d_inner = 0, d_state = 0, n_group = 0, n_head = 0;
  float eps = 1e-5f;                       // the gated RMSNorm's epsilon
  int64_t head_dim() const { return n_head > 0 ? d_inner / n_head : 0; }
  int64_t conv_ch() const { return d_inner + 2 * n_group * d_state; }
  int64_t in_cols() const { return 2 * d_inner + 2 * n_group * d_state + n_head; }
};

// An RWKV layer (rwkv6 / rwkv7; model/arch_rwkv.cpp has the definitions).
// For each token t of the batch in batch order, with the state of its
// sequence (KvView::rs: the token-shift rows [2, n_embd] in the conv state,
// att at 0 and ffn at 1; the wkv matrices [n_head, head_size, head_size] in
// the ssm state), prev_t is the previous token's normed input of the same
// sequence (its shift row for the first token of the batch), and the last
// token's input becomes the shift row.
// rwkv6's wkv: per head, S [key i, value j]:
//   y_j = sum_i r_i (S_ij + u_i k_i v_j);  S_ij = w_i S_ij + k_i v_j
// rwkv7's: per head, S [value i, key j], a = -kk, b = kk * iclr:
//   S_ij = S_ij w_j + v_i k_j + (sum_l a_l S_il) b_j;  y_i = sum_j S_ij r_j
// then a per-head LayerNorm (eps gn_eps), * ln + ln_b, the gate, the output projection.
// rwkv6qwen2 (rwkv6 without time_mix_first): k and v of kv_heads heads, each
// serving n_head / kv_heads consecutive heads, k := k (1 - w), the gated
// linear attention S_ij = w_i S_ij + k_i v_j, y_j = sum_i r_i S_ij / sqrt(hs),
// no group norm, a sigmoid gate; one shift row per sequence.
struct RwkvSpec {
  int64_t layer = 0;                 // the layer of KvView::rs
  const RwkvWeights* w = nullptr;
  int version = 6;                   // 6 or 7
  int64_t n_embd = 0, head_size = 0;
  int64_t n_shift = 2;               // shift rows per sequence (token_shift_count)
  int64_t kv_heads = 0;              // rwkv6qwen2's key/value heads (0: n_head)
  float gn_eps = 64e-5f;             // llama.cpp's group norm epsilon
  int64_t n_head() const { return head_size > 0 ? n_embd / head_size : 0; }
  int64_t n_kv_head() const { return kv_heads > 0 ? kv_heads : n_head(); }
  bool qrwkv() const { return version == 6 && w != nullptr && !w->first; }
};

class Ops {
 public:
  virtual ~Ops() = default;

  // Buffer b as an activation [rows, cols] (its values undefined until written).
  virtual Act buffer(Buf b, int64_t rows, int64_t cols) = 0;
  // Buffer b [rows, cols] whose values reach host[0, rows * cols) by the end of the step.
  virtual Act output(Buf b, float* host, int64_t rows, int64_t cols) = 0;

  // RoPE tables of the batch's positions for c; returns their id for
  // AttentionSpec::rope. Call before the step's other operations.
  virtual int prepare_rope(const RopeConfig& c) = 0;

  // out [n_tokens, table.cols()] = rows of the table (any stored type); the ids are checked by the caller.
  virtual void embed(const Weight& table, Ids ids, Act out) = 0;
  // x += y (same shape); x *= c; x = cap * tanh(x / cap).
  virtual void add(Act x, Act y) = 0;
  virtual void scale(Act x, float c) = 0;
  virtual void softcap(Act x, float cap) = 0;
  // out = norm(x) * n.w (+ n.b); Rms with ModelDims::norm_rms_eps, Layer with norm_eps.
  // Without n.w (olmo's non-parametric LayerNorm): norm(x) (+ n.b).
  // feeds: the weight of the product that reads out next (a backend may write
  // its input form in the same pass), or null. x and out may be the same.
  virtual void norm(NormKind kind, Act x, const Norm& n, Act out, const Weight* feeds = nullptr) = 0;
  // out [in.rows, w.rows()] = in · W^T (+ bias); accumulate: out += instead.
  virtual void linear(const Weight& w, const Weight& bias, Act in, Act out, bool accumulate = false) = 0;
  // out [n, n_embd] (+)= self-attention of the normed input h for spec.layer,
  // writing the batch's keys and values into the cache.
  virtual void attention(const AttentionSpec& spec, Act h, Act out, bool accumulate = false) = 0;
  // out [n, n_embd] (+)= multi-head latent attention of h (MlaSpec), writing
  // the batch's latent rows into the cache.
  virtual void mla_attention(const MlaSpec& spec, Act h, Act out, bool accumulate = false) = 0;
  // out (+)= the feed-forward block of h.
  virtual void feed_forward(const FfnSpec& spec, Act h, Act out, bool accumulate = false) = 0;
  // out (+)= softmax router, top-k experts (their SwiGLU outputs weighted by
  // the optionally renormalised probabilities), plus the gated shared expert.
  virtual void moe(const MoeWeights& w, Act h, Act out, bool accumulate = false) = 0;
  // out [n, n_embd] = bidirectional attention of h within each sequence of
  // the batch (ForwardBatch::seq), no cache, f32 (the bert family), with its
  // projections: spec.w's Q, K, V (+ biases) or fused wqkv (+ bqkv, nomic-bert),
  // and the output one. q and k turn by RoPE table spec.rope when set
  // (nomic-bert); spec.max_alibi_bias > 0 adds ALiBi: head h's score gets
  // alibi_slope(h) * -|pos_t - pos_u| (jina-bert-v2: llama.cpp's mask of a
  // non-causal ALiBi model). Scores are scaled by spec.scale (0: 1/sqrt(head_dim));
  // the other fields of spec are unused.
  virtual void encoder_attention(const AttentionSpec& spec, Act h, Act out) = 0;
  // out [n, n_embd] = cross-attention of h over the encoder's output
  // (ForwardBatch::enc, encoder-decoders): q = h wq, k and v from the encoder
  // rows of the token's sequence (ForwardBatch::seq, enc_seq) through wk and
  // wv, scores scaled by spec.scale (0: 1/sqrt(head_dim)), softmax, then wo;
  // in f32, no cache (llama.cpp's T5 decoder recomputes k and v each step).
  // The other fields of spec are unused.
  virtual void cross_attention(const AttentionSpec& spec, Act h, Act out) = 0;
  // out [n, n_embd] (+)= the Mamba-2 mixer of h (SsmSpec), reading and
  // updating the recurrent state of each token's sequence. A backend without
  // it throws InvalidArgument.
  virtual void ssm(const SsmSpec& /*spec*/, Act /*h*/, Act /*out*/, bool /*accumulate*/ = false) {
    throw InvalidArgument("this backend does not run state-space (Mamba-2) layers");
  }
  // out [n, n_embd] (+)= the RWKV time mix of the normed input h (RwkvSpec),
  // reading and updating each token's shift row 0 and wkv state. rwkv7:
  // v_first [n, n_embd] receives layer 0's values and gives them to the
  // later layers' value residual (unused by rwkv6). A backend without it
  // throws InvalidArgument.
  virtual void rwkv_time_mix(const RwkvSpec& /*spec*/, Act /*h*/, Act /*out*/, Act /*v_first*/,
                             bool /*accumulate*/ = false) {
    throw InvalidArgument("this backend does not run RWKV layers");
  }
  // out (+)= the RWKV channel mix of h, reading and updating shift row 1.
  virtual void rwkv_channel_mix(const RwkvSpec& /*spec*/, Act /*h*/, Act /*out*/, bool /*accumulate*/ = false) {
    throw InvalidArgument("this backend does not run RWKV layers");
  }
  // out [n_out, x.cols] = rows ForwardBatch::out_rows of x.
  virtual void gather_rows(Act x, Act out) = 0;

  // Moving an activation between backends (model/step.h: the residual
  // stream crosses where the layers change backend): the values of a as host
  // memory (null when this backend's memory is not the host's), a copied to
  // the host, and host values into a.
  virtual const float* host_data(Act a) = 0;
  virtual void to_host(Act a, float* host) = 0;
  virtual void from_host(const float* host, Act a) = 0;
};

}  // namespace ferrite::backend
