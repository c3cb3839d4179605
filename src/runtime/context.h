// An inference context: a model, its KV cache, a thread pool and scratch
// memory. Tools, the server and the bindings drive models through it.
//
//   auto model = model::Model::load(path);
//   runtime::Context ctx(model, {.n_ctx = 2048});
//   std::span<const float> logits = ctx.eval(prompt_tokens);   // sequence 0
//   ... sample, then ctx.eval({&next, 1}) ...
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "backend/switches.h"
#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"
#include "model/model.h"
#include "model/step.h"
#include "model/workspace.h"
#include "runtime/batch.h"
#include "runtime/context_state.h"
#include "runtime/kv_cache.h"
#include "runtime/lora_state.h"

namespace ferrite::runtime {

struct ContextParams {
  int64_t n_ctx = 0;       // cache cells; 0: the model's training context, capped at kDefaultMaxCtx
  int64_t n_batch = 512;   // tokens per forward pass (longer batches are split)
  int n_threads = 0;       // 0: all logical CPUs
  TensorType cache_type = TensorType::F16;    // K cache: f16, f32, bf16, q8_0, q4_0, q4_1, q5_0, q5_1 or iq4_nl
  TensorType cache_type_v = TensorType::F16;  // V cache: the same types
  int n_gpu_layers = 0;    // layers on the GPU (runtime::kAllLayers: all); needs a CUDA build
  bool embeddings = false; // decoders: keep final hidden states instead of logits (set_embeddings)
  int pooling_type = -1;   // embeddings' pooling: -1 the model's (<arch>.pooling_type), 0 none, 1 mean, 2 cls, 3 last, 4 rank
  // The backends' run-time switches (backend/switches.h; the GPU ones apply here).
  backend::Switches switches = backend::env_switches();
  // LoRA adapters (model/lora_adapter.h) and their default scales (empty: 1 each); see Context::lora().
  std::vector<std::shared_ptr<const model::LoraAdapter>> lora = {};
  std::vector<float> lora_scales = {};
  // Sliding-window and chunked layers (HParams::is_swa): false keeps only
  // the cells they can still see in a smaller cache (kv_cache.h; llama.cpp's
  // sizing, n_swa (or the chunk) * n_seq_max + n_batch cells rounded up to
  // 256), true the whole context as for the other layers (llama.cpp's
  // --swa-full: what context shift and re-using a prefix after the window
  // moved need). GPU layers keep the window on the GPU.
  bool swa_full = false;
  int n_seq_max = 1;       // sequences the window is sized for (the server's slots)
};

constexpr int64_t kDefaultMaxCtx = 4096;

// Cells of the sliding-window (or chunked) layers' own cache
// (KvCache::window_size) of a context with these parameters, or 0: those
// layers keep the whole context (--swa-full, no such layers, a window as
// large as the context).
// InvalidArgument for n_seq_max < 1.
int64_t window_cells(const model::HParams& hp, const ContextParams& p);

// The K/V cache a context with these parameters allocates, every layer
// counted (wherever it runs: a GPU keeps its layers' K/V in as many cells):
// its cells (n_ctx 0: the model's training context, capped at
// kDefaultMaxCtx), the sliding-window layers' window (window_cells: 0 none;
// one window per sequence of n_seq_max) and the bytes of K/V of all layers
// (KvCache::planned_bytes). What --fit counts. InvalidArgument as
// window_cells and for a negative n_ctx.
struct CachePlan {
  int64_t n_cells = 0;
  int64_t window_cells = 0;
  int64_t bytes = 0;
};
CachePlan cache_plan(const model::HParams& hp, const ContextParams& p);

class Context {
 public:
  Context(std::shared_ptr<const model::Model> model, const ContextParams& params);

  const model::Model& model() const { return *model_; }
  int64_t n_ctx() const { return cache_.size(); }
  int64_t n_vocab() const { return model_->hparams().n_vocab; }
  int n_threads() const { return pool_.size(); }
  // The backend that runs the last layers and the output: "CPU" or "CUDA".
  const char* backend_name() const;
  KvCache& cache() { return cache_; }
  // The LoRA adapters and the scales each sequence uses (lora_state.h); a
  // sequence's cached K/V depend on the scales it was evaluated with.
  LoraState& lora() { return lora_; }
  const LoraState& lora() const { return lora_; }

  // Evaluates a batch (split into passes of n_batch tokens). Afterwards
  // logits(i) is the i-th requested row in batch order. Throws
  // InvalidArgument for bad token ids, sequences, positions or a full cache
  // (the cache is left as before the failing pass).
  void decode(const Batch& batch);

  int64_t n_outputs() const { return n_out_; }
  std::span<const float> logits(int64_t i) const;

  // Appends `tokens` to sequence `seq` at its next positions and returns the
  // logits after the last one (all_logits: of every token, [n, n_vocab]).
  // rows_as_steps: each row's logits bit for bit those of a one-token step
  // (Batch::rows_as_steps; speculative verification).
  std::span<const float> eval(std::span<const int32_t> tokens, int seq = 0, bool all_logits = false,
                              bool rows_as_steps = false);

  // Encoder-decoders (t5; model().arch().has_encoder(), llama.cpp's
  // llama_encode): runs the encoder over `tokens` (positions from 0, one
  // pass of at most n_batch tokens) and keeps its output for sequence `seq`,
  // replacing what an earlier encode() kept for it; the decoder's
  // cross-attention of that sequence's tokens reads it from then on (decode()
  // refuses a sequence with none). Generation then decodes from
  // decoder_start_token(). Throws InvalidArgument for other models, no or
  // bad tokens, a bad sequence.
  void encode(std::span<const int32_t> tokens, int seq = 0);
  bool has_encoder() const { return model_->arch().has_encoder(); }
  // The token the decoder starts from: the model's decoder_start_token_id,
  // else `bos` (llama.cpp's rule).
  int32_t decoder_start_token(int32_t bos) const;

  // Encoders (bert; model().arch().is_encoder()): decode() evaluates the
  // batch in one pass (each sequence whole, positions from 0; no cache) and
  // keeps the final hidden states. embeddings(seq) is the pooled embedding
  // of a sequence of the last decode() ([n_embd], pooling from the model;
  // InvalidArgument for pooling none or a sequence not in the batch);
  // token_embeddings(i) the hidden state of the batch's i-th token. With
  // pooling rank (a reranker) embeddings(seq) is its score, one float from
  // the model's classification head on the sequence's first token, and no
  // token states are kept.
  //
  // Decoders in embeddings mode (set_embeddings(true), or
  // ContextParams::embeddings) evaluate through the cache as usual but keep,
  // instead of logits, the final hidden states after the output norm (what
  // multiplies the output matrix): token_embeddings(i) of the i-th output
  // row, [n_embd]; with a pooling model every token is an output and
  // embeddings(seq) pools the sequence's tokens of the last decode().
  // logits() throws while the mode is on.
  std::span<const float> embeddings(int seq) const;
  std::span<const float> token_embeddings(int64_t i) const;
  // Throws InvalidArgument when the architecture cannot give hidden states.
  void set_embeddings(bool on);
  bool embeddings_enabled() const { return embeddings_; }
  // The pooling in effect: ContextParams::pooling_type, else the model's.
  // Throws InvalidArgument for a pooling_type out of range.
  model::Pooling pooling() const;

  // Lets `observer` see the inputs of the weight products of every later
  // forward pass (nullptr: none). CPU only: InvalidArgument with GPU layers.
  void set_matmul_observer(backend::MatmulObserver* observer);

  // Forgets sequence `seq` (or everything for seq < 0).
  void clear(int seq = -1) { cache_.remove(seq, 0, -1); }
  // Forgets positions [p0, p1) of `seq` (p1 < 0: to the end; seq < 0: all).
  void remove_range(int seq, int32_t p0, int32_t p1) { cache_.remove(seq, p0, p1); }
  // Context shift: positions [p0, p1) of `seq` move by `delta`, their cached
  // keys re-rotated (KvCache::shift; context_shift.cpp).
  void shift_sequence(int seq, int32_t p0, int32_t p1, int32_t delta);
  // Copies positions [p0, p1) of `src` into new cells of `dst` (K/V on the
  // CPU and on the GPU; KvCache::copy_cells): `dst` then continues from
  // there without evaluating them. Returns the number of cells copied.
  int64_t copy_range(int src, int dst, int32_t p0, int32_t p1);

  // Saves sequence `seq` (its cells, and the caller's `tokens` of it) to a
  // file, and restores one into `seq` of a context of the same model,
  // returning the saved tokens (context_state.h has the format and errors).
  void save_sequence(int seq, const std::string& path, std::span<const int32_t> tokens = {});
  std::vector<int32_t> load_sequence(int seq, const std::string& path);
  // The same in memory: the bytes of such a file.
  std::string save_sequence_bytes(int seq, std::span<const int32_t> tokens = {});
  std::vector<int32_t> load_sequence_bytes(int seq, std::string_view bytes);

 private:
  // The GPU's K/V rows for saving and restoring (context_state.cpp; empty without GPU layers).
  OffloadedRows offloaded_rows();
  void decode_pass(const Batch& batch, int64_t begin, int64_t end);
  // A first step on a GPU offload, at creation (context.cpp).
  void warm_up();
  // kv_begin_ / kv_len_ of the pass's tokens: the cells their sequences occupy.
  void token_ranges(const Batch& batch, int64_t begin, int64_t n, int64_t n_kv);
  // The window's view of the pass (slots, ranges, mask), with a window cache.
  void window_view(const Batch& batch, int64_t begin, int64_t n, model::KvView& view);
  void encode(const Batch& batch);  // context_encode.cpp
  // Batch::types within the model's token type table (only encoders with one read them; context_encode.cpp).
  void check_token_types(const Batch& batch) const;
  // Encoder-decoders: the kept encoder output for the pass's tokens (context_encoder_decoder.cpp).
  void attach_encoder_output(const Batch& batch, int64_t begin, int64_t n, model::ForwardBatch& fb) const;
  // context_embed.cpp: whether batch row i is an output row; the forward
  // pass of one decode_pass writing logits or hidden states at output
  // n_out_; pooling of the kept states per sequence.
  bool is_output(const Batch& batch, int64_t i) const;
  void forward_outputs(const model::ForwardBatch& fb, const model::KvView& kv);
  void pool_sequences(const Batch& batch);
  // The row of each sequence's first token (rank pooling), ascending.
  static std::vector<int32_t> first_rows(const Batch& batch);

  std::shared_ptr<const model::Model> model_;
  ContextParams params_;
  KvCache cache_;
  LoraState lora_;
  cpu::ThreadPool pool_;
  model::Workspace ws_;
  std::unique_ptr<backend::Backend> cpu_;     // the CPU backend (pool_, ws_)
  std::unique_ptr<backend::Backend> gpu_;     // the GPU backend of an offload (-ngl), or null
  std::unique_ptr<model::Placement> placement_;  // which of them runs which layers
  std::vector<float> logits_;  // [n_out_, n_vocab]
  int64_t n_out_ = 0;
  Batch scratch_batch_;
  std::vector<float> mask_;                   // [n_tokens, widest token range]
  // The same for the layers of limited reach (HParams::reach: KvView::mask_swa
  // or mask_chunk) when this cache keeps them (no window cache).
  std::vector<float> mask_reach_;
  std::vector<int32_t> kv_begin_, kv_len_;    // [n_tokens] cells each token reads
  std::vector<float> mask_win_;               // a window cache's: the same for its cells
  std::vector<int32_t> win_begin_, win_len_;
  std::vector<float> states_;                // encoders, embeddings mode: [n_out, n_embd] of the last decode
  bool embeddings_ = false;                  // decoders: embeddings mode
  std::vector<std::vector<float>> pooled_;   // encoders: [kMaxSequences][n_embd or empty]
  std::vector<float> enc_states_;            // encoder-decoders: encode()'s output rows [n, n_embd]
  std::vector<int32_t> enc_seq_;             // and the sequence of each row
};

}  // namespace ferrite::runtime
