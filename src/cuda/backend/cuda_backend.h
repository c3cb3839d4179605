// The CUDA backend: the operations of backend/ops.h on one GPU, with the
// kernels of cuda/kernels and their fusions:
// - a norm writes the 8-bit (or f16) input of the product it feeds, SwiGLU
//   the down product's (kernels/fused_ops.cu);
// - one token's Q|K|V is one product of the stacked matrix, which also
//   rotates q, k and stores k, v (adjacent-pair RoPE, f16 cache;
//   kernels/gemv_quant.cu), and the decode attention writes the output
//   product's Q8_0 input;
// - decode kernels launch as programmatic dependents (kernels/pdl.cuh);
// - one-token steps are captured into a CUDA graph the second time a shape
//   runs and replayed after that: the model's code still runs each step, but
//   its kernel operations return at once and end_step launches the graph.
//   Copies (the staged inputs, the RoPE tables, a residual crossing from the
//   CPU) are issued directly before it. A shape whose first run synchronised
//   with the host (experts grouped through host ids, a copy to the host) is
//   never captured.
// The KV cache of its layers [first_layer, n_layer) lives on the device (K
// and V [n_cells, row bytes] f16 or rows of 32-value blocks; V not
// transposed); the runtime's cache decides cells and masks, which
// begin_step stages with the tokens. With a window cache (runtime/kv_cache.h)
// the sliding-window layers keep [window_cells, row bytes] instead: the
// window's cells, which KvView::swa gives (slots, ranges, mask; staged as a
// second view), and which the runtime moves through copy_window_cells.
//
// Files: cuda_backend.cpp (step life, graphs, buffers, the element-wise and
// row operations), staging.cpp (a step's inputs and attention plans),
// cache_cells.cpp (the cache's cells between steps), cuda_blocks.cpp (attention, the
// feed-forward variants, the experts, the encoders' attention),
// cuda_mla.cpp (multi-head latent attention), cuda_ssm.cpp (the Mamba-2 mixer), cuda_rwkv.cpp (RWKV's mixes),
// weights.h (device copies of the weights), gpu_moe.h, linear.h,
// cuda_lora.cpp (the LoRA terms, backend/lora.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "backend/backend.h"
#include "backend/switches.h"
#include "cuda/backend/gpu_moe.h"
#include "cuda/backend/linear.h"
#include "cuda/backend/weights.h"
#include "cuda/kernels/device_buffer.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {

struct CudaBackendParams {
  backend::ModelDims dims;
  int64_t n_cells = 0;      // KV cache cells
  int64_t first_layer = 0;  // the layers [first_layer, n_layer) have their cache here
  TensorType type_k = TensorType::F16, type_v = TensorType::F16;
  backend::Switches switches;
  int64_t window_cells = 0;          // > 0: the layers marked in window_layers keep this many cells
  std::vector<bool> window_layers;   // [n_layer]
};

// Host or device pointers of one cache view's staged inputs (staging.cpp).
struct StagedView {
  int32_t *slots, *begin, *len, *tiles, *listed;
  float *mask, *mask_swa, *mask_chunk;
};

class CudaBackend final : public backend::Backend {
 public:
  // Allocates the cache (the caller checked that it fits). Throws
  // InvalidArgument for cache types the GPU has not.
  explicit CudaBackend(const CudaBackendParams& p);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  const char* name() const override { return "CUDA"; }
  void begin_step(const backend::ForwardBatch& batch, const backend::KvView& kv) override;
  bool end_step() override;
  void cancel_step() override;

  backend::Act buffer(backend::Buf b, int64_t rows, int64_t cols) override;
  backend::Act output(backend::Buf b, float* host, int64_t rows, int64_t cols) override;
  int prepare_rope(const backend::RopeConfig& c) override;
  void embed(const backend::Weight& table, backend::Ids ids, backend::Act out) override;
  void add(backend::Act x, backend::Act y) override;
  void scale(backend::Act x, float c) override;
  void softcap(backend::Act x, float cap) override;
  void norm(backend::NormKind kind, backend::Act x, const backend::Norm& n, backend::Act out,
            const backend::Weight* feeds) override;
  void linear(const backend::Weight& w, const backend::Weight& bias, backend::Act in, backend::Act out,
              bool accumulate) override;
  void attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void mla_attention(const backend::MlaSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void feed_forward(const backend::FfnSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void moe(const backend::MoeWeights& w, backend::Act h, backend::Act out, bool accumulate) override;
  void encoder_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) override;
  void cross_attention(const backend::AttentionSpec& spec, backend::Act h, backend::Act out) override;
  void ssm(const backend::SsmSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void rwkv_time_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out, backend::Act v_first,
                     bool accumulate) override;
  void rwkv_channel_mix(const backend::RwkvSpec& spec, backend::Act h, backend::Act out, bool accumulate) override;
  void gather_rows(backend::Act x, backend::Act out) override;
  const float* host_data(backend::Act) override { return nullptr; }
  void to_host(backend::Act a, float* host) override;
  void from_host(const float* host, backend::Act a) override;

  // Context shift on this backend's layers' keys: each run of consecutive
  // cells is copied to the host, rotated there by the CPU's row code and
  // copied back (a shift happens once per half context, so the copies are
  // cheap next to the tokens between two shifts). Replayed graphs read the
  // cache by address, so they stay valid.
  void rotate_cached_keys(int64_t layer, std::span<const int32_t> cells,
                          const std::function<void(uint8_t* row)>& rotate) override;
  void copy_cached_cells(std::span<const int32_t> from, std::span<const int32_t> to) override;
  void copy_window_cells(std::span<const int32_t> from, std::span<const int32_t> to) override;
  void read_cached_rows(int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v) override;
  void write_cached_rows(int64_t layer, std::span<const int32_t> cells, const uint8_t* k, const uint8_t* v) override;

  // Bytes of weights uploaded so far (they are uploaded at their first use).
  uint64_t weight_bytes() const { return weights_.bytes(); }
  // Device bytes of its layers' K/V cache (FitReport::cache_bytes counts them).
  uint64_t cache_bytes() const;

 private:
  enum class Mode { Direct, Capture, Replay };
  // One cache view of a step: the whole cache's (kMainView) or a window
  // cache's (kWindowView, KvView::swa): its cells, ranges, masks (device
  // pointers into staged_) and attention plan.
  struct ViewStep {
    const backend::KvView* kv = nullptr;  // null: not in this step
    const int32_t* slots = nullptr;
    const int32_t* begin = nullptr;
    const int32_t* len = nullptr;
    const int32_t* tiles = nullptr;
    const int32_t* listed = nullptr;
    const float* mask = nullptr;
    const float* mask_swa = nullptr;
    const float* mask_chunk = nullptr;
    int64_t n_kv = 0, n_q_tiles = 0, n_decode = 0, n_split = 1, max_len = 0, mask_stride = 0;
    AttentionPlan plan;                                     // host copy until staged
    std::vector<int32_t> step_len;                          // [n_tokens] rows as steps: each token's range length
    std::vector<int32_t> step_shift;                        // [n_tokens] rows as steps, window: cells its range starts later
    std::vector<std::pair<int64_t, int64_t>> split_groups;  // rows as steps: runs of decode_tokens (count, n_split)
  };
  enum ViewId : int { kMainView, kWindowView, kViews };
  // begin_step's parts: the tokens checked; a view's cell ranges checked
  // (max_len, mask_stride) and its attention planned; the host inputs
  // staged in one copy; the step's mode.
  void check_tokens(const backend::ForwardBatch& batch);
  void plan_view(const backend::ForwardBatch& batch, const backend::KvView& kv, int64_t n_cells, ViewStep& v);
  void stage(const backend::ForwardBatch& batch);
  // A view's cells, ranges, masks (mask_floats: mask, sliding, chunked; 0:
  // none) and plan into the host side of the staged inputs.
  void stage_view(const ViewStep& vs, int64_t n, bool window, const int64_t (&mask_floats)[3], const StagedView& hv);
  void choose_mode(const backend::ForwardBatch& batch);
  // Rows as one-token steps (ForwardBatch::rows_as_steps; rows_as_steps.cpp):
  // every token to the decode attention, each over the cells its one-token
  // step reads (step_len) with that step's split count; tokens of one split
  // count consecutive in decode_tokens (split_groups). Sets the view's
  // n_split (the largest) and max_len.
  AttentionPlan plan_rows_as_steps(const backend::ForwardBatch& batch, const backend::KvView& kv, ViewStep& v);
  // cuda::attention, or one decode launch per split group as one-token steps would.
  void run_attention(AttentionParams ap, const ViewStep& v);
  // The view a layer's attention reads and writes (the window's for its
  // sliding layers with a window cache); InvalidArgument for a layer
  // without a cache here or a window layer in a step without the window.
  const ViewStep& view_of(const backend::AttentionSpec& spec) const;
  // Copies cell from[i] to to[i], in list order, in the layers of the main
  // cache (window false) or of the window (copy_cached_cells / copy_window_cells).
  void copy_cells(bool window, std::span<const int32_t> from, std::span<const int32_t> to);
  // read_cached_rows / write_cached_rows: runs of consecutive cells of a layer's K and V, one copy each.
  void transfer_rows(int64_t layer, std::span<const int32_t> cells, uint8_t* k, uint8_t* v, bool to_device);
  // Called first by every operation that launches kernels: false in replay
  // mode (the graph does it); begins the capture at the step's first kernel.
  bool kernels();
  // A copy or a host synchronisation inside the step (not capturable after the first kernel).
  void host_work();
  // The activation state of an Act (its cached 8-bit / f16 forms).
  Activation& act(backend::Act a);
  // After a kernel wrote a: forget its converted forms.
  void written(backend::Act a) { act(a).set(a.data, a.rows, a.cols); }
  // The device RoPE tables of id (cos then sin, [n, n_rot/2] each).
  const float* rope_cos(int id) const;
  const float* rope_sin(int id) const;
  // T5's bias per head and distance (cpu/attention/rel_pos_bias.h) of a relative
  // position bias table on the device, made and uploaded at its first use.
  const float* rel_table(const float* rel_b, int64_t n_buckets, bool bidirectional);
  // Scratch of `bytes` (grown on demand; by index).
  float* scratch(int i, int64_t floats);
  // The attention parameters of a layer (cache, masks, plan of view_of(spec)) for q -> out.
  AttentionParams attention_params(const backend::AttentionSpec& spec, float* q, float* out);
  // A RoPE table of the step (c null: no rotation).
  struct RopeRef {
    const backend::RopeConfig* c = nullptr;
    const float* cos_t = nullptr;
    const float* sin_t = nullptr;
  };
  // q, k, v [n, ...] of the normed input; true when the product also
  // rotated q, k and stored k, v into cells `slots` (one token, gemv_quant_rope).
  bool project_qkv(const backend::AttentionWeights& w, const RopeRef& r, backend::Act h, float* q, float* k,
                   float* v, uint16_t* kc, uint16_t* vc, const int32_t* slots);
  // RoPE of q and k, then k and v into the layer's cache cells `slots`.
  void rope_and_store(const RopeRef& r, int64_t n, float* q, float* k, float* v, uint16_t* kc, uint16_t* vc,
                      const int32_t* slots);
  void dense_ffn(const backend::FfnSpec& spec, backend::Act h, float* y, bool accumulate);
  // y (+)= a · W^T + bias in the CPU backend's order of the additions, with
  // the LoRA terms of `lw` (the weight w was made from).
  void project_out(const backend::Weight& lw, const GpuMatrix& w, const float* bias, Activation& a, float* y,
                   bool accumulate);
  // cuda_lora.cpp: whether the step has LoRA terms (they turn off the
  // products that stack several weights, and the graphs); the step's
  // per-token scales to the device; y [a.m(), w.rows()] += the terms of w for a.
  bool lora_on() const { return batch_ != nullptr && batch_->lora != nullptr; }
  void stage_lora(const backend::ForwardBatch& batch);
  void lora_add(const backend::Weight& w, Activation& a, float* y);

  backend::ModelDims dims_;
  backend::Switches sw_;
  int64_t n_cells_ = 0, first_layer_ = 0;
  int64_t n_window_cells_ = 0;       // > 0: a window cache
  std::vector<bool> in_window_;      // per layer from first_layer: keeps the window's cells
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<LinearRunner> lin_;
  WeightStore weights_;
  std::unique_ptr<GpuMoe> moe_;
  std::vector<DeviceBuffer> k_cache_, v_cache_;  // per layer from first_layer: [n_cells or window cells, row bytes]
  KvCacheRef k_ref_, v_ref_;                       // types and row bytes (data: per layer)

  // Per step.
  const backend::ForwardBatch* batch_ = nullptr;
  const backend::KvView* kv_ = nullptr;
  Mode mode_ = Mode::Direct;
  bool kernels_begun_ = false;  // the step launched (or captured) a kernel
  bool kernel_ops_ = false;     // the step issued a kernel operation (in any mode)
  bool host_synced_ = false;    // this step synchronised with the host or copied after its first kernel
  bool force_direct_ = false;   // the next step runs directly (end_step returned false)
  std::array<int64_t, 8> key_{};
  struct Output {
    backend::Buf buf;
    float* host;
    int64_t floats;
  };
  std::vector<Output> outputs_;
  int n_ropes_ = 0;
  std::vector<backend::RopeConfig> ropes_;        // this step's, by id
  std::vector<backend::RopeConfig> known_ropes_;  // the last steps', staged by begin_step
  int n_staged_ropes_ = 0;
  std::vector<const float*> rope_tables_;         // device tables by id: cos [n, n_rot/2], then sin

  // Staged inputs (device pointers into staged_; the cache views' in views_).
  struct Staged {
    const int32_t* tokens = nullptr;
    const int32_t* pos = nullptr;
    const int32_t* types = nullptr;  // ForwardBatch::types, or zeros
    const int32_t* seq = nullptr;
    const int32_t* rows = nullptr;
  };
  Staged in_;
  ViewStep views_[kViews];
  bool rows_as_steps_ = false;
  PinnedBuffer host_staged_, host_out_, host_cross_;
  DeviceBuffer staged_;
  std::vector<std::unique_ptr<PinnedBuffer>> rope_host_;
  std::vector<std::unique_ptr<DeviceBuffer>> rope_dev_;

  // The model's buffers and their activation states, and the operations' scratch.
  DeviceBuffer bufs_[backend::kBufCount];
  Activation acts_[backend::kBufCount];
  // The operations' scratch buffers (scratch() indices).
  enum ScratchId : int { kQkv, kAttn, kFfn, kSplit, kEncoder, kWide, kFfnAct, kLoraT, kLoraU, kCross, kScratch };
  DeviceBuffer scratch_[kScratch];
  Activation act_attn_, act_ffn_, act_tmp_, act_lora_, act_enc_;
  std::map<std::pair<const float*, bool>, std::unique_ptr<DeviceBuffer>> rel_tables_;  // rel_table()
  // cuda_ssm.cpp: the recurrent states of the step's sequences (copied from
  // and back to the runtime's host rows around each SSM layer) and each token's index into them.
  DeviceBuffer ssm_states_, ssm_slots_;
  // cuda_rwkv.cpp: the batch's RWKV state rows on the device (in ssm_states_:
  // the shift rows [n_u, 2, n_embd], then the wkv matrices [n_u, n_embd,
  // head_size]) and each token's index among them (ssm_slots_); copied there
  // (to_device) or back; the mixes' scratch.
  struct RwkvRows {
    float* shift = nullptr;
    float* wkv = nullptr;
    const int32_t* idx = nullptr;
  };
  RwkvRows rwkv_rows(const backend::RwkvSpec& spec, bool wkv, bool to_device);
  float* rwkv_product(const backend::Weight& w, float* in, int64_t n, float* out, bool accumulate = false);
  void rwkv6_mix_gpu(const backend::RwkvSpec& spec, const float* h, const float* sx, const RwkvRows& st, float* y);
  void rwkv7_mix_gpu(const backend::RwkvSpec& spec, const float* h, const float* sx, float* v_first,
                     const RwkvRows& st, float* y);
  DeviceBuffer rwkv_buf_;
  DeviceBuffer lora_scales_;  // the step's user scales: per adapter [n_tokens], then per adapter [n_out]

  // CUDA graphs of one-token steps, one per key (n_tokens, n_out, and per
  // view n_kv, cells read, mask stride).
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    uint64_t generation = 0;
    bool seen = false;         // ran once directly
    bool capturable = false;   // that run did not synchronise with the host
    std::vector<std::pair<int, int64_t>> outputs;  // the captured step's outputs (buffer, floats)
  };
  std::map<std::array<int64_t, 8>, Graph> graphs_;
  uint64_t capture_generation_ = 0;
};

}  // namespace ferrite::cuda
