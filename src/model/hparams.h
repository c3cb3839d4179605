// Hyperparameters of a transformer read from GGUF metadata. Keys are
// prefixed by the architecture ("llama.block_count"); what an architecture
// lacks keeps its default here and its file (arch_*.cpp) checks what it needs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/metadata.h"

namespace ferrite::model {

enum class RopeScaling { None, Linear, Yarn, LongRope };

// How an encoder's token states become one embedding per sequence
// (<arch>.pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank). Rank (a
// reranker's): the first token's state through the model's classification
// head, one score per sequence (llama.cpp's LLAMA_POOLING_TYPE_RANK).
enum class Pooling { None, Mean, Cls, Last, Rank };

struct RopeParams {
  int n_rot = 0;              // dimensions rotated per head
  bool neox = false;          // pairing, set by the architecture
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;    // 1 / scaling factor
  RopeScaling scaling = RopeScaling::None;
  int n_ctx_orig = 0;         // context the model was trained with (YaRN)
  float yarn_ext_factor = 0.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  // YaRN's correction range rounded to whole pairs (cpu/ops/rope.h):
  // rope.scaling.yarn_truncate (ferrite's key, from transformers'
  // rope_scaling truncate; llama.cpp has none and always rounds), true when
  // absent except where the architecture says otherwise (gpt-oss).
  bool yarn_truncate = true;
};

// How far back a layer of limited reach (HParams::is_swa) attends: a query
// at position p sees the cells at positions [first_visible(p), p], within a
// sliding window of `window` positions (first_visible = p - window + 1) or,
// with `chunk` set, within its chunk of that many positions (llama4's
// chunked attention: first_visible = p / chunk * chunk, the chunk's start).
// first_visible never decreases with p: a cell hidden from a position stays
// hidden from every later one, which is what lets the runtime's window cache
// (runtime/kv_cache.h) drop it. The masks, the drops and the checks of what a
// sequence can still continue from all ask sees().
struct AttentionReach {
  int64_t window = 0;  // sliding window (HParams::n_swa); 0: none
  int64_t chunk = 0;   // chunk size (HParams::n_chunk); > 0: chunks, not a window
  bool limited() const { return window > 0 || chunk > 0; }
  int64_t first_visible(int64_t pos) const { return chunk > 0 ? pos / chunk * chunk : pos - window + 1; }
  bool sees(int64_t pos, int64_t cell_pos) const { return cell_pos >= first_visible(pos); }
  // The most positions below a query that it sees (window - 1 or chunk - 1)
  // plus one: per sequence what a window cache sizes for (KvCache::window_size).
  int64_t span() const { return chunk > 0 ? chunk : window; }
};

struct HParams {
  std::string arch;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;      // per head, keys and values (attention.key_length or n_embd / n_head)
  int64_t n_ff = 0;          // dense feed-forward width (0 when absent)
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  float norm_eps = 1e-5f;      // attention.layer_norm_epsilon
  float norm_rms_eps = 1e-5f;  // attention.layer_norm_rms_epsilon
  int64_t n_swa = 0;         // sliding window (0: none)
  // [n_layer] or empty: the layers of limited reach (reach()): those that
  // attend through the sliding window, or with n_chunk those that attend
  // within their chunk (set by the architecture; the runtime's window cache
  // holds only the cells they can still see for them).
  std::vector<bool> swa_layers;
  // Chunked attention (llama4; set by the architecture): > 0 makes the
  // runtime give KvView::mask_chunk, chunks of n_chunk positions, for the
  // layers of swa_layers (a model has a window or chunks, not both).
  int64_t n_chunk = 0;
  float attn_softcap = 0.0f; // attention logit soft-cap (0: none)
  float final_softcap = 0.0f;
  // ALiBi (attention.max_alibi_bias, or the family's fixed value): > 0 makes
  // the runtime's KV masks carry -|q_pos - k_pos| and the attention add
  // per-head slopes of it (backend::AttentionSpec); keys carry no position.
  float max_alibi_bias = 0.0f;
  Pooling pooling = Pooling::None;  // encoders (set by the architecture)
  // Encoders with a token type table (bert's token_types, set by the
  // architecture): its rows, the types a batch may give its tokens
  // (runtime::Batch::types); 0: none (every token is type 0).
  int64_t n_token_types = 0;
  // T5 (set by the architecture): > 0, the relative position buckets, makes
  // the runtime's KV masks carry -(q_pos - k_pos) as for ALiBi (the attention
  // then adds each head's bias of the distance's bucket); the token an
  // encoder-decoder's decoder starts from (<arch>.decoder_start_token_id),
  // -1 when the file has none (the runtime then takes BOS, as llama.cpp).
  int64_t n_rel_buckets = 0;
  int32_t decoder_start_token = -1;
  RopeParams rope;
  // State-space (Mamba-2) layers: <arch>.ssm.conv_kernel, inner_size,
  // state_size, group_count, time_step_rank (the number of heads); 0 when
  // absent. [n_layer] or empty: the layers that are SSM mixers (set by the
  // architecture); the runtime keeps a recurrent state for them (and no K/V).
  int64_t ssm_d_conv = 0, ssm_d_inner = 0, ssm_d_state = 0, ssm_n_group = 0, ssm_n_head = 0;
  std::vector<bool> recurrent_layers;
  // RWKV (rwkv6, rwkv7): <arch>.wkv.head_size (> 0 marks the family) and
  // token_shift_count (2: the time mix's and the channel mix's previous
  // rows). Its recurrent state per layer: the token-shift rows in the place
  // of the conv state, the wkv matrices [n_embd / head_size, head_size,
  // head_size] in the place of the scan's.
  int64_t rwkv_head_size = 0, rwkv_token_shift = 0;

  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
  AttentionReach reach() const { return {n_chunk > 0 ? 0 : n_swa, n_chunk}; }
  // A layer of limited reach: a sliding-window layer, or a chunked one.
  bool is_swa(int64_t il) const {
    return reach().limited() && il >= 0 && static_cast<size_t>(il) < swa_layers.size() && swa_layers[static_cast<size_t>(il)];
  }
  bool is_recurrent(int64_t il) const {
    return il >= 0 && static_cast<size_t>(il) < recurrent_layers.size() && recurrent_layers[static_cast<size_t>(il)];
  }
  bool has_recurrent_layers() const {
    for (int64_t il = 0; il < n_layer; ++il) {
      if (is_recurrent(il)) return true;
    }
    return false;
  }
  // Floats of one sequence's recurrent state in an SSM layer: conv [d_conv - 1, conv_ch], ssm [d_inner, d_state];
  // in an RWKV layer: token shift [token_shift_count, n_embd], wkv [n_embd, head_size].
  int64_t ssm_conv_floats() const {
    if (rwkv_head_size > 0) return rwkv_token_shift * n_embd;
    return (ssm_d_conv - 1) * (ssm_d_inner + 2 * ssm_n_group * ssm_d_state);
  }
  int64_t ssm_state_floats() const {
    return rwkv_head_size > 0 ? n_embd * rwkv_head_size : ssm_d_inner * ssm_d_state;
  }
  bool has_swa_layers() const {
    for (int64_t il = 0; il < n_layer; ++il) {
      if (is_swa(il)) return true;
    }
    return false;
  }
};

// Reads the keys every decoder shares. Throws ModelError for missing
// required keys or inconsistent values (heads not dividing, zero sizes).
HParams read_hparams(const gguf::Metadata& md);

}  // namespace ferrite::model
