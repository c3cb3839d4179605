#include "cuda/backend/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cpu/ops/rope.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

size_t f32_bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

bool same_rope(const backend::RopeConfig& a, const backend::RopeConfig& b) {
  return a.n_rot == b.n_rot && a.neox == b.neox && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.ext_factor == b.ext_factor && a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.yarn_truncate == b.yarn_truncate &&
         a.freq_factors == b.freq_factors;
}

}  // namespace

CudaBackend::CudaBackend(const CudaBackendParams& p)
    : dims_(p.dims), sw_(p.switches), n_cells_(p.n_cells), first_layer_(p.first_layer),
      n_window_cells_(p.window_cells) {
  if (n_cells_ <= 0) throw InvalidArgument("GPU offload: the context size must be positive");
  if (first_layer_ < 0 || first_layer_ >= dims_.n_layer) {
    throw InvalidArgument("GPU offload: first GPU layer " + std::to_string(first_layer_) + " of " +
                          std::to_string(dims_.n_layer));
  }
  for (TensorType t : {p.type_k, p.type_v}) {
    if (!kv_cache_gpu_supported(t)) {
      throw InvalidArgument("GPU offload: KV cache type " + tensor_type_name(t) + " is not supported on the GPU (" +
                            kv_cache_gpu_type_names() + ")");
    }
  }
  k_ref_.type = p.type_k;
  v_ref_.type = p.type_v;
  k_ref_.row_bytes = kv_cache_row_bytes(p.type_k, dims_.n_embd_kv());  // throws for a width not of whole blocks
  v_ref_.row_bytes = kv_cache_row_bytes(p.type_v, dims_.n_embd_kv());
  if (n_window_cells_ < 0 || (n_window_cells_ > 0 && p.window_layers.size() != static_cast<size_t>(dims_.n_layer))) {
    throw InvalidArgument("GPU offload: a window cache needs its cells and a flag per layer");
  }
  const size_t n_layers = static_cast<size_t>(dims_.n_layer - first_layer_);
  k_cache_.resize(n_layers);
  v_cache_.resize(n_layers);
  in_window_.assign(n_layers, false);
  for (size_t i = 0; i < n_layers; ++i) {
    in_window_[i] = n_window_cells_ > 0 && p.window_layers[static_cast<size_t>(first_layer_) + i];
    const int64_t cells = in_window_[i] ? n_window_cells_ : n_cells_;
    const size_t k_layer = static_cast<size_t>(cells * k_ref_.row_bytes);  // [cells, K row bytes]
    const size_t v_layer = static_cast<size_t>(cells * v_ref_.row_bytes);  // [cells, V row bytes]
    k_cache_[i].resize(k_layer);
    v_cache_[i].resize(v_layer);
    // Cells never written are masked, but keep them finite (0 * NaN would poison sums; zero blocks are zeros).
    FERRITE_CUDA_CHECK(cudaMemset(k_cache_[i].as(), 0, k_layer));
    FERRITE_CUDA_CHECK(cudaMemset(v_cache_[i].as(), 0, v_layer));
  }
  // (the memsets run on the legacy stream, which the backend's does not wait for)
  FERRITE_CUDA_CHECK(cudaDeviceSynchronize());
  FERRITE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  lin_ = std::make_unique<LinearRunner>(stream_);
  lin_->set_mma_rows(sw_.cuda_mma_min_rows, sw_.cuda_mma_max_rows);
  moe_ = std::make_unique<GpuMoe>(dims_, weights_);
}

uint64_t CudaBackend::cache_bytes() const {
  uint64_t b = 0;
  for (size_t i = 0; i < k_cache_.size(); ++i) b += k_cache_[i].size() + v_cache_[i].size();
  return b;
}

CudaBackend::~CudaBackend() {
  for (auto& [key, g] : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
  moe_.reset();
  lin_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

// ---- the step ----------------------------------------------------------------

void CudaBackend::begin_step(const backend::ForwardBatch& batch, const backend::KvView& kv) {
  batch_ = &batch;
  kv_ = &kv;
  outputs_.clear();
  ropes_.clear();
  n_ropes_ = 0;
  kernels_begun_ = false;
  kernel_ops_ = false;
  host_synced_ = false;
  mode_ = Mode::Direct;
  for (Activation& a : acts_) a.changed();
  for (ViewStep& v : views_) v = ViewStep{};
  if (batch.n_tokens <= 0) return;
  check_tokens(batch);
  const bool cache = kv.mask != nullptr;
  if (kv.swa != nullptr && n_window_cells_ == 0) {
    throw InvalidArgument("GPU backend: a sliding-window cache view, but the backend keeps the whole cache");
  }
  rows_as_steps_ = batch.rows_as_steps && batch.n_tokens > 1 && !exact_products();
  lin_->set_rows_as_steps(rows_as_steps_);
  if (cache) {
    plan_view(batch, kv, n_cells_, views_[kMainView]);
    if (kv.swa != nullptr) plan_view(batch, *kv.swa, n_window_cells_, views_[kWindowView]);
  }
  int64_t split_floats = 0;
  for (const ViewStep& v : views_) {
    split_floats = std::max(split_floats, attention_decode_scratch_floats(v.n_decode, dims_.n_head, dims_.head_dim,
                                                                          v.n_split));
  }
  scratch(kSplit, split_floats);
  stage(batch);
  stage_lora(batch);
  choose_mode(batch);
}

void CudaBackend::choose_mode(const backend::ForwardBatch& batch) {
  // One-token steps: replayed from the graph of their shape, captured the
  // second time a shape runs (the first allocates what it needs and tells
  // whether it synchronises with the host).
  const ViewStep& m = views_[kMainView];
  const ViewStep& w = views_[kWindowView];
  key_ = {batch.n_tokens, batch.n_out, m.n_kv, m.max_len, m.mask_stride, w.n_kv, w.max_len, w.mask_stride};
  // Steps with LoRA terms run directly (their scales are per step).
  // Steps of an encoder-decoder upload the encoder's output in the step (cross_attention).
  if (sw_.cuda_graphs && batch.n_tokens == 1 && !force_direct_ && batch.lora == nullptr && batch.enc == nullptr &&
      !batch.encode) {
    Graph& g = graphs_[key_];
    if (g.exec != nullptr && g.generation == g_buffer_generation.load()) {
      mode_ = Mode::Replay;
    } else {
      if (g.exec != nullptr) {
        cudaGraphExecDestroy(g.exec);
        g.exec = nullptr;
      }
      if (g.seen && g.capturable) mode_ = Mode::Capture;
    }
  }
  force_direct_ = false;
}

bool CudaBackend::kernels() {
  kernel_ops_ = true;
  if (mode_ == Mode::Replay) return false;
  if (!kernels_begun_) {
    kernels_begun_ = true;
    if (mode_ == Mode::Capture) {
      capture_generation_ = g_buffer_generation.load();
      FERRITE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    }
  }
  return true;
}

void CudaBackend::host_work() {
  if (!kernel_ops_) return;
  // After the step's first kernel: the step is not capturable (its first run said so).
  host_synced_ = true;
  if (mode_ != Mode::Direct) throw Error("GPU backend: a copy inside a recorded step (the step's operations changed)");
}

bool CudaBackend::end_step() {
  const int64_t n = batch_ != nullptr ? batch_->n_tokens : 0;
  if (n <= 0) return true;
  const bool graphed = sw_.cuda_graphs && n == 1;
  std::vector<std::pair<int, int64_t>> signature;
  for (const Output& o : outputs_) signature.emplace_back(static_cast<int>(o.buf), o.floats);
  if (mode_ == Mode::Capture && kernels_begun_) {
    cudaGraph_t graph = nullptr;
    FERRITE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    Graph& g = graphs_[key_];
    if (capture_generation_ != g_buffer_generation.load()) {
      // A buffer moved while capturing: the graph holds stale addresses and nothing ran.
      cudaGraphDestroy(graph);
      g.capturable = false;
      force_direct_ = true;
      return false;
    }
    const cudaError_t e = cudaGraphInstantiate(&g.exec, graph, 0);
    cudaGraphDestroy(graph);
    FERRITE_CUDA_CHECK(e);
    g.generation = capture_generation_;
    g.outputs = signature;
    FERRITE_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
  } else if (mode_ == Mode::Replay) {
    Graph& g = graphs_[key_];
    if (g.outputs != signature || g.generation != g_buffer_generation.load()) {
      // Another step of the same shape (hidden states instead of logits), or
      // a buffer moved since begin_step: run it directly.
      force_direct_ = true;
      return false;
    }
    FERRITE_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
  } else if (graphed && !lora_on()) {
    Graph& g = graphs_[key_];
    if (!g.seen) {
      g.seen = true;
      g.capturable = !host_synced_;
    }
  }
  // The outputs to the host.
  int64_t total = 0;
  for (const Output& o : outputs_) total += o.floats;
  host_out_.reserve(f32_bytes(total));
  float* staging = host_out_.as<float>();
  int64_t at = 0;
  for (const Output& o : outputs_) {
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(staging + at, bufs_[static_cast<int>(o.buf)].as(), f32_bytes(o.floats),
                                       cudaMemcpyDeviceToHost, stream_));
    at += o.floats;
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  at = 0;
  for (const Output& o : outputs_) {
    std::memcpy(o.host, staging + at, f32_bytes(o.floats));
    at += o.floats;
  }
  return true;
}

void CudaBackend::cancel_step() {
  if (mode_ == Mode::Capture && kernels_begun_) {
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    graphs_[key_].capturable = false;
  }
  cudaStreamSynchronize(stream_);
  mode_ = Mode::Direct;
}

// ---- buffers and copies ----------------------------------------------------------

backend::Act CudaBackend::buffer(backend::Buf b, int64_t rows, int64_t cols) {
  DeviceBuffer& d = bufs_[static_cast<int>(b)];
  d.reserve(f32_bytes(std::max<int64_t>(rows * cols, 1)));
  return {d.as<float>(), rows, cols, b};
}

backend::Act CudaBackend::output(backend::Buf b, float* host, int64_t rows, int64_t cols) {
  const backend::Act a = buffer(b, rows, cols);
  outputs_.push_back({b, host, rows * cols});
  return a;
}

Activation& CudaBackend::act(backend::Act a) {
  Activation& s = acts_[static_cast<int>(a.buf)];
  if (s.x() != a.data || s.m() != a.rows || s.k() != a.cols) s.set(a.data, a.rows, a.cols);
  return s;
}

float* CudaBackend::scratch(int i, int64_t floats) {
  scratch_[i].reserve(f32_bytes(std::max<int64_t>(floats, 1)));
  return scratch_[i].as<float>();
}

int CudaBackend::prepare_rope(const backend::RopeConfig& c) {
  if (kernel_ops_) throw Error("GPU backend: RoPE tables prepared after the step's first operation");
  const int id = n_ropes_++;
  ropes_.push_back(c);
  if (id < n_staged_ropes_ && same_rope(known_ropes_[static_cast<size_t>(id)], c)) return id;  // staged by begin_step
  // A table begin_step did not know: its own copy (and staged from the next
  // step on); a recorded step would read the staged tables, so this one runs directly.
  mode_ = Mode::Direct;
  if (known_ropes_.size() <= static_cast<size_t>(id)) known_ropes_.resize(static_cast<size_t>(id) + 1);
  known_ropes_[static_cast<size_t>(id)] = c;
  while (rope_host_.size() <= static_cast<size_t>(id)) {
    rope_host_.push_back(std::make_unique<PinnedBuffer>());
    rope_dev_.push_back(std::make_unique<DeviceBuffer>());
  }
  const int64_t n = batch_->n_tokens, half = c.n_rot / 2;
  const size_t bytes = f32_bytes(std::max<int64_t>(2 * n * half, 1));
  rope_host_[static_cast<size_t>(id)]->reserve(bytes);
  rope_dev_[static_cast<size_t>(id)]->reserve(bytes);
  float* h = rope_host_[static_cast<size_t>(id)]->as<float>();
  cpu::rope_table(c, batch_->pos, n, h, h + n * half);
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(rope_dev_[static_cast<size_t>(id)]->as(), h, f32_bytes(2 * n * half),
                                     cudaMemcpyHostToDevice, stream_));
  if (rope_tables_.size() <= static_cast<size_t>(id)) rope_tables_.resize(static_cast<size_t>(id) + 1);
  rope_tables_[static_cast<size_t>(id)] = rope_dev_[static_cast<size_t>(id)]->as<float>();
  return id;
}

const float* CudaBackend::rope_cos(int id) const { return rope_tables_[static_cast<size_t>(id)]; }

const float* CudaBackend::rope_sin(int id) const {
  return rope_tables_[static_cast<size_t>(id)] + batch_->n_tokens * (ropes_[static_cast<size_t>(id)].n_rot / 2);
}

void CudaBackend::to_host(backend::Act a, float* host) {
  host_work();
  host_synced_ = true;
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(host, a.data, f32_bytes(a.size()), cudaMemcpyDeviceToHost, stream_));
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::from_host(const float* host, backend::Act a) {
  host_work();
  host_cross_.reserve(f32_bytes(a.size()));
  std::memcpy(host_cross_.as(), host, f32_bytes(a.size()));
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(a.data, host_cross_.as(), f32_bytes(a.size()), cudaMemcpyHostToDevice, stream_));
  act(a).changed();
}

// ---- row and element-wise operations ---------------------------------------------

void CudaBackend::embed(const backend::Weight& table, backend::Ids ids, backend::Act out) {
  if (!kernels()) return;
  const int32_t* rows = ids == backend::Ids::Tokens ? in_.tokens : ids == backend::Ids::Positions ? in_.pos : in_.types;
  get_rows(weights_.matrix(table), rows, out.rows, out.data, stream_);
  written(out);
}

void CudaBackend::add(backend::Act x, backend::Act y) {
  if (!kernels()) return;
  cuda::add(x.data, y.data, x.size(), stream_);
  written(x);
}

void CudaBackend::scale(backend::Act x, float c) {
  if (!kernels()) return;
  cuda::scale(x.data, c, x.size(), stream_);
  written(x);
}

void CudaBackend::softcap(backend::Act x, float cap) {
  if (!kernels()) return;
  cuda::softcap(x.data, cap, x.size(), stream_);
  written(x);
}

void CudaBackend::norm(backend::NormKind kind, backend::Act x, const backend::Norm& n, backend::Act out,
                       const backend::Weight* feeds) {
  if (!kernels()) return;
  const float* w = weights_.vec(n.w);
  const float* b = weights_.vec(n.b);
  Activation& a = act(out);
  a.set(out.data, out.rows, out.cols);
  if (kind == backend::NormKind::Layer) {
    layer_norm(x.data, w, b, dims_.norm_eps, x.rows, x.cols, out.data, stream_);
    return;
  }
  // Outside the exact mode, the norm also writes the input form of the product it feeds.
  ActOut form;
  if (sw_.cuda_fuse && !exact_products() && feeds != nullptr && b == nullptr && fused_out(feeds->type(), a, form)) {
    rms_norm_act(x.data, w, dims_.norm_rms_eps, x.rows, x.cols, out.data, form, stream_);
    mark_made(a, form);
    return;
  }
  rms_norm(x.data, w, dims_.norm_rms_eps, x.rows, x.cols, out.data, stream_);
  if (b != nullptr) add_bias(out.data, b, out.rows, out.cols, stream_);
}

void CudaBackend::linear(const backend::Weight& w, const backend::Weight& bias, backend::Act in, backend::Act out,
                         bool accumulate) {
  if (!kernels()) return;
  const GpuMatrix& m = weights_.matrix(w);
  project_out(w, m, weights_.vec(bias), act(in), out.data, accumulate);
  written(out);
}

void CudaBackend::gather_rows(backend::Act x, backend::Act out) {
  if (!kernels()) return;
  cuda::gather_rows(x.data, in_.rows, out.rows, x.cols, out.data, stream_);
  written(out);
}

}  // namespace ferrite::cuda
