// Host entry points of the CUDA kernels (all asynchronous on `stream`).
// Shapes are row-major, innermost last: [rows, cols]. Each kernel mirrors a
// CPU reference (src/cpu) and is tested against it in tests/cuda.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/kernels/gpu_matrix.h"

namespace ferrite::cuda {

// ---- activations for quantized products (cpu/dot/act_quant.h) ----------------

// Q8_1: Q8_0's values plus s per block (cpu/dot/act_quant.h's Q8_1, the
// format llama.cpp multiplies Q4_1/Q5_1 weights with).
enum class ActFormat { Q8_0, Q8_K, Q8_1 };
constexpr int kActFormats = 3;

// The activation format of a quantized weight type (Q4_0/Q5_0/Q8_0: Q8_0;
// Q4_1/Q5_1: Q8_1; K types: Q8_K).
ActFormat act_format_for(TensorType weight_type);

// Quantized activations [m, k]: int8 values, and per 32 values the f32 scale
// (Q8_0/Q8_1: f16-rounded d; Q8_K: the 256-block's d, repeated) and the sum of the 32 ints.
struct QuantAct {
  int8_t* qs = nullptr;     // [m, k]
  float* d = nullptr;       // [m, k / 32]
  int32_t* sums = nullptr;  // [m, k / 32]
  // Q8_1 only: s = f16(d' * sum) per 32 as f32, d' = amax / 127 before its
  // f16 rounding (the Q4_1/Q5_1 offset term m * s); null otherwise.
  float* s = nullptr;       // [m, k / 32]
};

// k must be a multiple of 32 (Q8_0, Q8_1) or 256 (Q8_K).
void quantize_act(ActFormat f, const float* x, int64_t m, int64_t k, const QuantAct& out, cudaStream_t s);

// y [m, w.n] = x · W^T for a quantized W (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K
// .. Q6_K) with the activations already quantized in act_format_for(w.type),
// per block the CPU's integer dot and float terms; accumulate: y +=.
bool matmul_quant_supports(TensorType t);
void matmul_quant(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s);

// y [m, w.n] = x · W^T for a quantized W (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) on the int8
// tensor cores (matmul_mma.cu; sm_80 and later), the activations as for
// matmul_quant; any m, in f32 sums of another order than the CPU's (the same
// for every run). scratch holds split-k partial sums (grown as needed).
// supports(): the type (not Q4_1, Q5_0, Q5_1, Q2_K, Q3_K: linear.h routes those
// around it), k a multiple of 256, 16-byte aligned weights under
// 4 GiB, a device with int8 mma.
bool matmul_mma_supports(const GpuMatrix& w);
void matmul_mma(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, DeviceBuffer& scratch,
                cudaStream_t s);

// y [m, w.n] = x · W^T for F16 weights (x: f16 [m, k]) or F32 weights (x: f32 [m, k]).
void matmul_float(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, cudaStream_t s);

// True for the weight types dequantize_f16 takes (every quantized type gpu_supports).
bool dequant_f16_supports(TensorType t);

// out [w.n, w.k] = W dequantized to f16 (cuda/dequant.cu), for the cuBLAS
// prefill product; out must be 16-byte aligned.
void dequantize_f16(const GpuMatrix& w, uint16_t* out, cudaStream_t s);

// out [w.n, w.k] = W dequantized to f32, the values of the CPU's reference
// dequantizer (every quantized type gpu_supports); out 16-byte aligned.
void dequantize_f32(const GpuMatrix& w, float* out, cudaStream_t s);

// out [m, k] = f16(d * q) of quantized activations (any format).
void quantized_act_to_f16(const QuantAct& a, int64_t m, int64_t k, uint16_t* out, cudaStream_t s);

// out [m, k] = d * q (exact in f32): the CPU's activation round trip.
void quantized_act_to_f32(const QuantAct& a, int64_t m, int64_t k, float* out, cudaStream_t s);

// ---- the dequantized product (dequant_product.cu) --------------------------
// The exact mode's product for the IQ/TQ types: rows dequantized to f32 times
// the activations' 8-bit round trip in f32 (matmul_float's order), as the
// CPU multiplied them before its integer IQ/TQ dots (cpu/dot/quant_dot_iq_ref.cpp:
// per-block integer sums). Within the golden tolerances of those, not their bits.
bool exact_dequantized(TensorType t);

// y [m, cols] with rows ldy apart = src [m, cols] (accumulate: y + src).
void store_columns(const float* src, int64_t m, int64_t cols, float* y, int64_t ldy, bool accumulate, cudaStream_t s);

// Process-wide: true makes every product and attention use the CPU's
// arithmetic (the golden tests' bit-for-bit path); false (the default unless
// the switch FERRITE_CUDA_EXACT=1, backend/switches.h) lets prefill take
// cuBLAS (linear.h) and the tiled attention kernel.
void set_exact_products(bool exact);
bool exact_products();

// y [m, w.n] = x · W^T for F16 W and f16 x [m, k] in any summation order
// (matmul_f16_fast.cu: small batches outside the exact mode); supports():
// k a multiple of 8, 16-byte aligned rows and x. pdl: launched as a
// programmatic dependent of the previous kernel (pdl.cuh). (Its first
// version, for comparisons: bench/cuda/legacy_kernels.cu.)
bool gemv_f16_supports(const GpuMatrix& w, const void* x);
void gemv_f16(const GpuMatrix& w, const void* x, int64_t m, float* y, bool accumulate, bool pdl, cudaStream_t s);

// Activation rows the bandwidth GEMV for quantized weights takes.
constexpr int64_t kGemvMaxRows = 4;

// y [m, w.n] (+)= x · W^T for 1..kGemvMaxRows activation rows and quantized W
// (every quantized type gpu_supports) on the activations quantized as for matmul_quant,
// in f32 sums of another order than the CPU's (gemv_quant.cu: several loads
// in flight per lane, activations staged in shared memory). supports(): the
// type and shape, aligned weights, staged activations within the shared
// memory budget. pdl as for gemv_f16.
bool gemv_quant_supports(const GpuMatrix& w, int64_t m);

// The stacked Q|K|V product of one token that also does rope_store_kv's
// work for adjacent-pair RoPE (llama's; not NeoX's, whose pairs are half a
// head apart): its blocks' rows come in pairs (2i, 2i + 1) of one head, so
// a block rotates its own q and k outputs, writes them to y and stores the
// rotated k and the v outputs as f16 in cache row slot[0] (k_cache, v_cache
// [cells, n_kv]). y: q | k | v as gemv_quant writes it, q and k rotated.
struct RopeKvOut {
  const float* cos_t = nullptr;  // [half] of the token's position
  const float* sin_t = nullptr;
  int64_t n_q = 0, n_kv = 0;     // rows of q, of k (= of v)
  int64_t head_dim = 0;
  int64_t half = 0;              // rotated pairs per head (n_rot / 2)
  const int32_t* slot = nullptr;
  uint16_t* k_cache = nullptr;
  uint16_t* v_cache = nullptr;
};
bool gemv_rope_supports(const GpuMatrix& w, const RopeKvOut& r);
void gemv_quant_rope(const GpuMatrix& w, const QuantAct& a, float* y, const RopeKvOut& r, bool pdl, cudaStream_t s);

void gemv_quant(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, bool pdl,
                cudaStream_t s);

// y [m, w.n] (+)= x · W^T for the IQ and TQ types (iq_tables.h) and any m
// (groups of kGemvMaxRows rows; gemv_iq.cu), on the activations quantized
// in act_format_for(w.type), in f32 sums of another order than the CPU's.
// supports(): the type, k a multiple of its block, the type's device table.
bool gemv_iq_supports(const GpuMatrix& w);
void gemv_iq(const GpuMatrix& w, const QuantAct& a, int64_t m, float* y, bool accumulate, cudaStream_t s);

// True where the decode GEMVs (pdl_enabled) and the other decode kernels
// (pdl_chain_enabled: norms, quantizers, rope, store_kv, attention_decode)
// are launched as programmatic dependents (pdl.cuh): sm_90 and later, and
// the switch FERRITE_CUDA_PDL (backend/switches.h) neither 0 (none) nor,
// for the chain, gemv (GEMVs only).
bool pdl_enabled();
bool pdl_chain_enabled();

// ---- element-wise and row kernels ------------------------------------------

// y = x / sqrt(mean(x^2) + eps) * w per row of n (w may be null; x, y may alias).
void rms_norm(const float* x, const float* w, float eps, int64_t rows, int64_t n, float* y, cudaStream_t s);

// Rotates x [n_tokens, n_heads, head_dim] in place with the tables cos/sin
// [n_tokens, n_rot/2] (cpu/ops/rope.h): NeoX pairs (i, i + n_rot/2) or adjacent pairs.
void rope(float* x, const float* cos_t, const float* sin_t, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
          int n_rot, bool neox, cudaStream_t s);

// One token: rope() over the n_head + n_head_kv heads of qk [q | k] (the
// first row of cos/sin), then store_kv() of k and v [n_head_kv * head_dim]
// into cache row slot[0] (device), in one launch: the same values.
void rope_store_kv(float* qk, const float* v, const float* cos_t, const float* sin_t, int64_t n_head,
                   int64_t n_head_kv, int64_t head_dim, int n_rot, bool neox, const int32_t* slot, uint16_t* k_cache,
                   uint16_t* v_cache, cudaStream_t s);

// y [rows, n] = silu(gate) * up (y may alias up).
void swiglu(const float* gate, const float* up, int64_t rows, int64_t n, float* y, cudaStream_t s);

// The converted form of a row kernel's output that the next product reads,
// written by the same launch (fused_ops.cu): the 8-bit blocks of `format`
// into `quant` (as quantize_act writes them), or, when f16 is set, f16
// values (as to_f16 writes them).
struct ActOut {
  ActFormat format = ActFormat::Q8_0;
  QuantAct quant;
  uint16_t* f16 = nullptr;
};
// Buffers set, and n a multiple of the block (Q8_0: 32, Q8_K: 256, f16: 8).
bool act_out_supports(const ActOut& out, int64_t n);

// rms_norm (its sum of squares in another order: y may differ in the last
// bit of a row's scale), and out = y converted (x, y may alias).
void rms_norm_act(const float* x, const float* w, float eps, int64_t rows, int64_t n, float* y, const ActOut& out,
                  cudaStream_t s);

// swiglu (the same values), and out = y converted (y may alias up).
void swiglu_act(const float* gate, const float* up, int64_t rows, int64_t n, float* y, const ActOut& out,
                cudaStream_t s);

// y [rows, n] += b [n].
void add_bias(float* y, const float* b, int64_t rows, int64_t n, cudaStream_t s);

// x [n] += y [n].
void add(float* x, const float* y, int64_t n, cudaStream_t s);

// y = f16(x), n elements.
void to_f16(const float* x, uint16_t* y, int64_t n, cudaStream_t s);

// x [n_ids, table.k] = rows ids[i] of the table (dequantized; ids already checked).
void get_rows(const GpuMatrix& table, const int32_t* ids, int64_t n_ids, float* x, cudaStream_t s);

// dst [n, cols] = src rows idx[i] of [?, cols].
void gather_rows(const float* src, const int32_t* idx, int64_t n, int64_t cols, float* dst, cudaStream_t s);

// Writes k, v [n_tokens, n_embd_kv] (f32) as f16 into cache rows slots[t] of
// k_cache, v_cache [n_cells, n_embd_kv].
void store_kv(const float* k, const float* v, const int32_t* slots, int64_t n_tokens, int64_t n_embd_kv,
              uint16_t* k_cache, uint16_t* v_cache, cudaStream_t s);

// ---- other families (family_ops.cu) -------------------------------------------

// y = (x - mean) / sqrt(var + eps) * w + b per row of n (w, b may be null; x, y may alias).
void layer_norm(const float* x, const float* w, const float* b, float eps, int64_t rows, int64_t n, float* y,
                cudaStream_t s);
// x *= c; x = cap * tanh(x / cap) (as x * (1 / cap) like the CPU backend), n elements.
void scale(float* x, float c, int64_t n, cudaStream_t s);
void softcap(float* x, float cap, int64_t n, cudaStream_t s);
// gpt-oss's clamped SwiGLU, n elements (cpu::swiglu_oai's twin; the CPU's values); y may alias either.
void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* y, cudaStream_t s);
// x = min(max(x, -c), c), n elements (cpu::clamp_inplace's twin; mpt's clamp_kqv).
void clamp(float* x, float c, int64_t n, cudaStream_t s);
// y = gelu(gate) * up, or gelu(gate) when up is null, through the CPU's f16
// table (cpu/ops/gelu_f16.h, copied to the device once): the CPU's values.
void geglu_f16(const float* gate, const float* up, int64_t n, float* y, cudaStream_t s);
const uint16_t* gelu_table_device();
// x [rows, n] = silu(x) (the row kernels' exp, as swiglu).
void silu(float* x, int64_t rows, int64_t n, cudaStream_t s);
// y [rows, n] = silu(gu[:, :n]) * gu[:, n:] of a fused gate|up product gu [rows, 2n].
void swiglu_fused(const float* gu, int64_t rows, int64_t n, float* y, cudaStream_t s);
// dst [rows, cols] = columns [col0, col0 + cols) of src (rows ld apart).
void gather_columns(const float* src, int64_t ld, int64_t col0, int64_t rows, int64_t cols, float* dst,
                    cudaStream_t s);
// The encoders' attention (no cache): out [n, n_head * head_dim] = softmax(q k^T * scale + alibi) v per head
// over the tokens u with seq[u] == seq[t] (seq null: all), q, k, v [n, n_head * head_dim] f32; n at most 4096.
// max_alibi_bias > 0: head h adds alibi_slope(h) * -|pos[t] - pos[u]| (cpu/attention/alibi.h; pos on the device).
// dist_bias (device [n_head, 2 kRelMaxDistance + 1], cpu/attention/rel_pos_bias.h, bidirectional; null: none): head h
// adds dist_bias[h * (2 kRelMaxDistance + 1) + kRelMaxDistance + clamp(pos[u] - pos[t])] (T5).
// CPU twin: CpuBackend::encoder_attention.
void attention_seq(const float* q, const float* k, const float* v, const int32_t* seq, const int32_t* pos,
                   float max_alibi_bias, int64_t n, int64_t n_head, int64_t head_dim, float scale, float* out,
                   cudaStream_t s, const float* dist_bias = nullptr);
// An encoder-decoder's cross-attention: out [n, n_head * head_dim] = softmax(q k^T * scale) v per head over
// the n_k rows u of k, v [n_k, n_head * head_dim] with k_seq[u] == seq[t] (either null: all); n_k at most
// 4096. CPU twin: CpuBackend::cross_attention.
void attention_cross(const float* q, const float* k, const float* v, const int32_t* seq, const int32_t* k_seq,
                     int64_t n, int64_t n_k, int64_t n_head, int64_t head_dim, float scale, float* out,
                     cudaStream_t s);

// ---- the KV cache's types (kv_store.cu, kv_blocks.cuh) ---------------------

// True for the cache types the GPU stores and reads: F16, F32, BF16, Q8_0,
// Q4_0, Q4_1, Q5_0, Q5_1 (the CPU's cache types except IQ4_NL).
bool kv_cache_gpu_supported(TensorType t);
// The GPU's cache types, for messages ("f16, q8_0, ...").
const char* kv_cache_gpu_type_names();
// Bytes of a cache row of n values (block types: n a multiple of 32).
// Throws InvalidArgument for a type the GPU does not store.
int64_t kv_cache_row_bytes(TensorType t, int64_t n);

// One layer's K or V cache on the device: rows [n_cells] of row_bytes bytes.
struct KvCacheRef {
  void* data = nullptr;
  TensorType type = TensorType::F16;
  int64_t row_bytes = 0;
};

// Writes k, v [n_tokens, n_embd_kv] (f32) into cache rows slots[t] of k_cache
// and v_cache, each in its type (block types: the bits of the CPU's
// quantizer, model/kv_quant.h; f16: as store_kv). n_embd_kv a multiple of 32
// where a type is a block type.
void store_kv_typed(const float* k, const float* v, const int32_t* slots, int64_t n_tokens, int64_t n_embd_kv,
                    const KvCacheRef& k_cache, const KvCacheRef& v_cache, cudaStream_t s);

// ---- attention over the cache (cpu/attention/attention.h semantics) ------------------

struct AttentionParams {
  const float* q = nullptr;         // [n_tokens, n_head, head_dim]
  // [n_cells, n_head_kv * head_dim]: f16 values, or rows of k_row_bytes /
  // v_row_bytes bytes of another type (f32, bf16 or a block type:
  // kv_cache_gpu_supported), read back value by value in the kernels (never
  // a dequantized copy); V not transposed. The query is rounded as the CPU
  // rounds it for K's type and (exact kernel) the probabilities for V's
  // (kv_blocks.cuh kv_round_q).
  const void* k = nullptr;
  const void* v = nullptr;
  TensorType k_type = TensorType::F16, v_type = TensorType::F16;
  int64_t k_row_bytes = 0, v_row_bytes = 0;  // types other than f16 (attention_typed_rows fills in f16 ones)
  const float* mask = nullptr;      // [n_tokens, mask_stride]: 0 (or the ALiBi distance) or -inf
  int64_t n_kv = 0, n_tokens = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
  // Per-token cell ranges (several sequences in one cache, model/forward.h
  // KvView): token t reads cells [kv_begin[t], kv_begin[t] + kv_len[t]) of
  // [0, n_kv), and mask row t then covers that range (element j: cell
  // kv_begin[t] + j). Null: every token reads [0, n_kv), mask_stride n_kv.
  const int32_t* kv_begin = nullptr;  // [n_tokens] (device)
  const int32_t* kv_len = nullptr;    // [n_tokens] (device)
  int64_t mask_stride = 0;            // elements between mask rows (with the ranges)
  int64_t max_len = 0;                // the largest kv_len (with the ranges; host value)
  // A split of the tokens between the prefill and decode kernels (outside
  // exact mode; plan_attention below): the tiled kernel takes q_tiles, each
  // up to kAttentionQTile consecutive tokens that share one range; the
  // decode kernel takes the listed decode_tokens. Null: the kernel chosen
  // for the whole pass by the rule of attention().
  const int32_t* q_tiles = nullptr;        // [n_q_tiles][2]: first token, count (device)
  int64_t n_q_tiles = 0;
  const int32_t* decode_tokens = nullptr;  // [n_decode_tokens] (device)
  int64_t n_decode_tokens = 0;
  float scale = 1.0f, softcap = 0.0f;
  // ALiBi (cpu/attention/alibi.h): head h adds alibi_slope(h) * mask, the mask then
  // holding -|q_pos - k_pos| for visible cells; 0: none.
  float max_alibi_bias = 0.0f;
  // T5's relative position bias (cpu/attention/rel_pos_bias.h, causal; device [n_head,
  // n_dist]): head h adds dist_bias[h * n_dist + min(-mask, n_dist - 1)]
  // instead of the mask, which holds -(q_pos - k_pos); the exact kernel
  // only. Null: none.
  const float* dist_bias = nullptr;
  int64_t n_dist = 0;
  // Attention sinks (cpu/attention/attention.h): head h's logit sinks[h] joins the
  // softmax's maximum and denominator (device [n_head]); null: none.
  const float* sinks = nullptr;
  float* out = nullptr;             // [n_tokens, n_head, head_dim]
  // The decode kernel split over the cells (attention_decode_splits): n_split
  // chunks per token's range and their states in split_scratch
  // (attention_decode_scratch_floats; device). Null: no split.
  float* split_scratch = nullptr;
  int64_t n_split = 1;
  // The decode kernel's warps per block chosen as for this many tokens (0:
  // the launch's own): 1 makes each token's arithmetic that of its one-token
  // step (speculative verification, ForwardBatch::rows_as_steps).
  int64_t shape_rows = 0;
  // The decode kernel also writes out's Q8_0 blocks (as quantize_act writes
  // them: qs, d and sums per 32) beside out, for the product after it (set
  // only where attention_decode_takes_all). Null: none.
  QuantAct out_q8;
};

// True when attention() runs every token of p through the decode kernel
// (which can write out_q8 beside out).
bool attention_decode_takes_all(const AttentionParams& p);

// True when K or V is of a block type (the kernels' typed reads).
inline bool attention_typed(const AttentionParams& p) {
  return p.k_type != TensorType::F16 || p.v_type != TensorType::F16;
}
// p with the row bytes of an f16 K or V set (n_head_kv * head_dim values);
// throws InvalidArgument for a type the GPU does not read or row bytes that
// do not match the type and width.
AttentionParams attention_typed_rows(const AttentionParams& p);

// Queries per block of the tiled kernel.
constexpr int64_t kAttentionQTile = 32;

// The split of a pass's tokens (host arrays of its ranges, model/forward.h):
// runs of at least kTiledMinRun consecutive tokens sharing a range (a
// prompt chunk) go to the tiled kernel in tiles that never straddle two
// runs; the others (one token from each of many sequences) to the decode
// kernel. Without ranges (kv_begin null) the whole pass is one run.
struct AttentionPlan {
  std::vector<int32_t> q_tiles;        // [n][2]: first token, count
  std::vector<int32_t> decode_tokens;
};
AttentionPlan plan_attention(const int32_t* kv_begin, const int32_t* kv_len, int64_t n_tokens);

// Cells one launch of the exact kernel can attend over (scores live in
// shared memory); the tiled kernel has no limit.
int64_t attention_max_kv();
// Outside exact_products(), for shapes both kernels take: with a split
// (q_tiles / decode_tokens set) each part goes to its kernel; else prefill
// passes (at least kTiledMinTokens tokens) through attention_tiled and the
// others (decode) through attention_decode. In exact mode, or for shapes
// they do not take, the exact kernel (attention.cu: the CPU's bits).
constexpr int64_t kTiledMinTokens = 16;
constexpr int64_t kTiledMinRun = 8;
void attention(const AttentionParams& p, cudaStream_t s);

// Flash-attention-style kernel (attention_tiled.cu): head_dim 64 or 128,
// 16-byte aligned q/out, 8-byte aligned k/v.
bool attention_tiled_supports(const AttentionParams& p);
void attention_tiled(const AttentionParams& p, cudaStream_t s);

// Decode kernel (attention_decode.cu: a warp per cell, online softmax per
// warp, f32 probabilities): head_dim 64 or 128, 8-byte aligned k/v.
bool attention_decode_supports(const AttentionParams& p);
void attention_decode(const AttentionParams& p, cudaStream_t s);

// Chunks the decode kernel splits each range into for `rows` tokens of
// n_head heads reading up to max_len cells (1: no split): enough blocks to
// fill the device, chunks of at least 256 cells. The scratch it then needs:
// [rows, n_head, n_split] states of head_dim + 2 floats.
int64_t attention_decode_splits(int64_t rows, int64_t n_head, int64_t max_len);
int64_t attention_decode_scratch_floats(int64_t rows, int64_t n_head, int64_t head_dim, int64_t n_split);

}  // namespace ferrite::cuda
