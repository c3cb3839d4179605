// The pre-norm decoder (model/decoder.h: llama, mistral, qwen2, qwen3 with a
// dense feed-forward; Mixtral-style llama, qwen2moe, qwen3moe with experts,
// gpu_moe.h) with its last layers [first_gpu_layer, n_layer) and the
// output on the GPU (all of them by default; the others run on the CPU,
// cuda/cpu_front.h, and the residual stream crosses once per pass):
//   x = embed(tokens); per layer: x += attn(rms_norm(x)); x += ffn(rms_norm(x))
//   logits = output(rms_norm(x[out_rows]))
// The KV cache lives on the device (K and V [n_cells, n_embd_kv] f16 or rows
// of 32-value blocks, OffloadParams' types; V not transposed); the runtime's cache still decides cells and masks, which
// each forward pass uploads with the tokens and the RoPE tables.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend.h"
#include "cuda/cpu_front.h"
#include "cuda/device_buffer.h"
#include "cuda/gpu_matrix.h"
#include "cuda/linear.h"
#include "cuda/ops.h"

namespace ferrite::cuda {

class GpuMoe;  // gpu_moe.h: the expert layers' feed-forward

class GpuDecoder : public model::Architecture {
 public:
  GpuDecoder(const model::Model& m, const OffloadParams& p);
  ~GpuDecoder() override;

  void forward(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
               model::Workspace& ws, float* logits) const override;

  // Bytes of weights uploaded (for reports).
  uint64_t weight_bytes() const { return weight_bytes_; }

  // Context shift on the GPU layers' keys: each run of consecutive cells is
  // copied to the host, rotated there by the CPU's row code and copied back
  // (a shift happens once per half context, so the copies are cheap next to
  // the tokens between two shifts).
  void rotate_cached_keys(int64_t layer, std::span<const int32_t> cells,
                          const std::function<void(uint8_t* row)>& rotate) override;

 private:
  struct Layer {
    GpuMatrix attn_norm, wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm, ffn_norm, gate, up, down;
    // wq|wk|wv and gate|up as one matrix each (rows stacked; wq ... up are
    // views of them), or null where the parts differ in type or row length.
    // Where only wv differs (Q4_K_M's Q6_K layers), qk stacks wq|wk.
    GpuMatrix qkv, gate_up, qk;
  };
  // True when the tensors `names` exist as 2-D matrices of one type and row
  // length with their data mapped (upload_stacked can stack them).
  bool stackable(const std::vector<std::string>& names) const;
  // Uploads tensor `name` (null when optional and absent).
  GpuMatrix upload(const std::string& name, bool required);
  // Uploads the required tensors `names` (same input, so same row length) as
  // one matrix with their rows stacked and sets views[i] to part i; returns
  // the whole. Parts of different types or row lengths are uploaded one by
  // one instead (the whole is then null).
  GpuMatrix upload_stacked(const std::vector<std::string>& names, const std::vector<GpuMatrix*>& views);
  void forward_impl(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                    model::Workspace& ws, float* logits);
  void ensure_workspace(int64_t n, int64_t n_out, int64_t n_kv);
  // Runs body() through the graph of this decode shape (see graphs_).
  template <typename Body>
  void run_graph(const std::array<int64_t, 4>& key, Body& body);

  const model::Model& model_;
  model::HParams hp_;
  int64_t n_cells_ = 0;
  int64_t first_gpu_layer_ = 0;        // layers below it run on the CPU (front_)
  std::unique_ptr<CpuFront> front_;
  std::unique_ptr<GpuMoe> moe_;        // expert layers (models with n_expert > 0)
  cudaStream_t stream_ = nullptr;
  std::vector<DeviceBuffer> buffers_;  // every uploaded tensor
  uint64_t weight_bytes_ = 0;
  GpuMatrix tok_embd_, output_norm_, output_;
  std::vector<float> rope_freqs_;      // host copy (RoPE tables are built on the host)
  std::vector<Layer> layers_;                    // GPU layers, layers_[il - first_gpu_layer_]
  int64_t n_ff_ = 0;                             // the dense layers' widest feed-forward (0: experts only)
  std::vector<DeviceBuffer> k_cache_, v_cache_;  // per GPU layer: [n_cells, row bytes of the K / V type]
  KvCacheRef k_cache_ref_, v_cache_ref_;          // the types and row bytes (data: per layer)

  // Per-pass scratch (grown on demand).
  struct Scratch {
    DeviceBuffer x, h, qkv, attn, gate_up, rows, logits, staged;  // qkv: q, k, v one after another; gate_up too
    DeviceBuffer attn_split;  // the decode attention's split states (attention_decode_splits)
    Activation act_h, act_attn, act_ffn, act_rows;
    int64_t n = 0, n_out = 0, n_kv = 0;
  };
  Scratch s_;
  PinnedBuffer host_staged_, host_logits_;
  // CUDA graphs of the decode step (one token), one per (n_out, n_kv, cells read, mask stride):
  // captured the second time a shape runs (the first allocates), replayed
  // after; stale when device buffers move (g_buffer_generation).
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    uint64_t generation = 0;
    bool seen = false;
  };
  std::map<std::array<int64_t, 4>, Graph> graphs_;
  bool use_graphs_ = true;  // FERRITE_CUDA_GRAPHS=0 turns them off
  bool fuse_ = true;        // FERRITE_CUDA_FUSE=0: norms and SwiGLU without their fused conversions
  bool fuse_attn_ = true;   // FERRITE_CUDA_FUSE=noattn: the decode attention without its Q8_0 output blocks
  bool fuse_rope_ = true;   // FERRITE_CUDA_FUSE=norope: RoPE and the K/V store of one token in their own launch
  LinearRunner* linear_ = nullptr;
};

}  // namespace ferrite::cuda
