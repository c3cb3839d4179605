// What one forward pass receives: the batch of tokens and the view of the KV
// cache it reads and writes. The runtime (src/runtime) owns the cache and
// decides cells and masks; the model describes the computation and the
// backends (backend.h) run it.
#pragma once

#include <cstdint>
#include <vector>

#include "gguf/tensor_type.h"

namespace ferrite::backend {

struct LoraStep;  // lora.h

struct ForwardBatch {
  const int32_t* tokens = nullptr;   // [n_tokens]
  const int32_t* pos = nullptr;      // [n_tokens] positions within each token's sequence
  int64_t n_tokens = 0;
  const int32_t* out_rows = nullptr; // [n_out] batch rows whose logits are wanted, ascending
  int64_t n_out = 0;
  const int32_t* seq = nullptr;      // [n_tokens] sequence of each token (encoders attend within it); nullptr: all one
  // [n_tokens] each token's type (segment id: bert's token_types table; a
  // cross-encoder's document is type 1), checked against the table by the
  // runtime; nullptr: every token type 0.
  const int32_t* types = nullptr;
  const LoraStep* lora = nullptr;    // the step's LoRA adapters (lora.h), or nullptr: none
  // Each row's outputs are to be those a one-token step of its token gives,
  // bit for bit (speculative verification: greedy tokens then do not depend
  // on the drafts): a backend must not choose kernels or reduction orders by
  // the batch's shape. The CPU's products and attention do not; the GPU's
  // fast paths do unless told (cuda/backend/cuda_backend.h).
  bool rows_as_steps = false;
  // Encoders with a classification head (rank pooling, a reranker's): out_rows
  // are each sequence's first token, and the output is the head's score of
  // each, [n_out, 1], instead of hidden states.
  bool classify = false;
  // Encoder-decoders (t5): `encode` makes this pass the encoder's, over whole
  // sequences without a cache, its output the encoder's final states
  // [n_out, n_embd]; otherwise the decoder's cross-attention reads the
  // encoder's output enc [n_enc, n_embd] (host f32), row r of sequence
  // enc_seq[r], and seq gives each token's sequence.
  bool encode = false;
  const float* enc = nullptr;
  const int32_t* enc_seq = nullptr;
  int64_t n_enc = 0;
};

// K and V of one layer, f16: K [n_cells, n_embd_kv], V transposed [n_embd_kv, n_cells].
// A quantized cache (quant/kv_quant.h) instead holds K (k_q) and/or V (v_q,
// not transposed) as rows of blocks of k_type / v_type [n_cells, row bytes];
// the f16 pointer is then null.
struct KvLayer {
  uint16_t* k = nullptr;
  uint16_t* vt = nullptr;
  uint8_t* k_q = nullptr;
  uint8_t* v_q = nullptr;
  TensorType k_type = TensorType::F16;
  TensorType v_type = TensorType::F16;
};

// The recurrent state of the layers that have one (Mamba-2, backend::SsmSpec),
// f32 in host memory, one row per state slot: conv [n_slots, d_conv - 1,
// conv_ch] and ssm [n_slots, n_head, head_dim, d_state] (null for layers
// without state). The runtime gives each sequence a slot (zeroed when the
// sequence starts) and each batch token its sequence's slot; a step updates
// the slots in batch order, so each sequence's tokens must come in order.
struct RecurrentLayer {
  float* conv = nullptr;
  float* ssm = nullptr;
};

struct RecurrentView {
  std::vector<RecurrentLayer> layers;  // [n_layer]
  const int32_t* slot = nullptr;       // [n_tokens]
};

struct KvView {
  std::vector<KvLayer> layers;       // [n_layer]
  int64_t n_cells = 0;               // cache size (row length of V transposed)
  const int32_t* slots = nullptr;    // [n_tokens] cell receiving each batch token's K/V
  int64_t n_kv = 0;                  // attention reads cells [0, n_kv)
  const float* mask = nullptr;       // [n_tokens, n_kv]: 0 visible, -inf hidden (causal, per sequence)
  const float* mask_swa = nullptr;   // same with the sliding window applied, or nullptr
  // Same with chunked attention (llama4's RoPE layers): a cell is visible
  // only from the token's own chunk (in_same_chunk), or nullptr.
  const float* mask_chunk = nullptr;
  // Optional per-token cell ranges (several sequences in one cache): token t
  // reads only cells [kv_begin[t], kv_begin[t] + kv_len[t]) (within [0, n_kv)),
  // and row t of the masks then covers just that range: mask[t * mask_stride + j]
  // is for cell kv_begin[t] + j. nullptr: every token reads [0, n_kv).
  const int32_t* kv_begin = nullptr; // [n_tokens]
  const int32_t* kv_len = nullptr;   // [n_tokens]
  int64_t mask_stride = 0;           // with kv_begin: elements between mask rows
  // A window cache (runtime/kv_cache.h): the sliding-window layers' own
  // cells, with their slots, ranges and (window) mask; attention with
  // AttentionSpec::sliding reads and writes there instead. nullptr: those
  // layers use this view with mask_swa.
  const KvView* swa = nullptr;
  // Recurrent layers' state (models with SSM layers), or nullptr.
  const RecurrentView* rs = nullptr;
};

// Chunked attention (HParams::n_chunk): a token at position pos sees a cell
// holding cell_pos (<= pos) only when both lie in the same chunk of n_chunk
// positions, [pos / n_chunk * n_chunk, pos].
inline bool in_same_chunk(int32_t pos, int32_t cell_pos, int64_t n_chunk) {
  return static_cast<int64_t>(cell_pos) >= static_cast<int64_t>(pos) / n_chunk * n_chunk;
}

}  // namespace ferrite::backend
