#include "cuda/backend/cuda_backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "cpu/rope.h"
#include "cuda/kernels/check.h"

namespace ferrite::cuda {
namespace {

template <typename T>
T* carve(uint8_t*& p, int64_t n) {
  T* out = reinterpret_cast<T*>(p);
  p += (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T) + 15) / 16 * 16;
  return out;
}

size_t f32_bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

bool same_rope(const backend::RopeConfig& a, const backend::RopeConfig& b) {
  return a.n_rot == b.n_rot && a.neox == b.neox && a.freq_base == b.freq_base && a.freq_scale == b.freq_scale &&
         a.ext_factor == b.ext_factor && a.attn_factor == b.attn_factor && a.beta_fast == b.beta_fast &&
         a.beta_slow == b.beta_slow && a.n_ctx_orig == b.n_ctx_orig && a.freq_factors == b.freq_factors;
}

}  // namespace

CudaBackend::CudaBackend(const CudaBackendParams& p)
    : dims_(p.dims), sw_(p.switches), n_cells_(p.n_cells), first_layer_(p.first_layer) {
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
  const size_t n_layers = static_cast<size_t>(dims_.n_layer - first_layer_);
  k_cache_.resize(n_layers);
  v_cache_.resize(n_layers);
  const size_t k_layer = static_cast<size_t>(n_cells_ * k_ref_.row_bytes);  // [n_cells, K row bytes]
  const size_t v_layer = static_cast<size_t>(n_cells_ * v_ref_.row_bytes);  // [n_cells, V row bytes]
  for (size_t i = 0; i < n_layers; ++i) {
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

CudaBackend::~CudaBackend() {
  for (auto& [key, g] : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
  moe_.reset();
  lin_.reset();
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void CudaBackend::rotate_cached_keys(int64_t layer, std::span<const int32_t> cells,
                                     const std::function<void(uint8_t* row)>& rotate) {
  if (layer < first_layer_ || layer >= dims_.n_layer) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps its keys on the CPU");
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no step in flight reads the rows
  uint8_t* base = k_cache_[static_cast<size_t>(layer - first_layer_)].as<uint8_t>();
  const size_t row = static_cast<size_t>(k_ref_.row_bytes);
  std::vector<uint8_t> host;
  // Each run of consecutive cells in one copy each way.
  for (size_t i = 0; i < cells.size();) {
    size_t j = i + 1;
    while (j < cells.size() && cells[j] == cells[j - 1] + 1) ++j;
    const size_t n = j - i;
    if (cells[i] < 0 || static_cast<int64_t>(cells[i]) + static_cast<int64_t>(n) > n_cells_) {
      throw InvalidArgument("context shift: cell " + std::to_string(cells[i]) + " outside the GPU cache");
    }
    uint8_t* dev = base + static_cast<size_t>(cells[i]) * row;
    host.resize(n * row);
    FERRITE_CUDA_CHECK(cudaMemcpy(host.data(), dev, n * row, cudaMemcpyDeviceToHost));
    for (size_t r = 0; r < n; ++r) rotate(host.data() + r * row);
    FERRITE_CUDA_CHECK(cudaMemcpy(dev, host.data(), n * row, cudaMemcpyHostToDevice));
    i = j;
  }
}

void CudaBackend::copy_cached_cells(std::span<const int32_t> from, std::span<const int32_t> to) {
  if (from.size() != to.size()) throw InvalidArgument("copy_cached_cells: " + std::to_string(from.size()) +
                                                      " source cells for " + std::to_string(to.size()));
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] < 0 || from[i] >= n_cells_ || to[i] < 0 || to[i] >= n_cells_) {
      throw InvalidArgument("copy_cached_cells: cell outside the GPU cache");
    }
  }
  // Runs of consecutive cells on both sides in one copy per layer and side.
  for (size_t i = 0; i < from.size();) {
    size_t j = i + 1;
    while (j < from.size() && from[j] == from[j - 1] + 1 && to[j] == to[j - 1] + 1) ++j;
    const size_t n = j - i;
    for (size_t l = 0; l < k_cache_.size(); ++l) {
      for (auto [buf, row] : {std::pair{&k_cache_[l], k_ref_.row_bytes}, std::pair{&v_cache_[l], v_ref_.row_bytes}}) {
        uint8_t* base = buf->as<uint8_t>();
        const auto r = static_cast<size_t>(row);
        FERRITE_CUDA_CHECK(cudaMemcpyAsync(base + static_cast<size_t>(to[i]) * r, base + static_cast<size_t>(from[i]) * r,
                                           n * r, cudaMemcpyDeviceToDevice, stream_));
      }
    }
    i = j;
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));
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
  if (batch.n_tokens <= 0) return;
  if (kv.swa != nullptr) {
    // The runtime keeps the whole cache with GPU layers (runtime/context.cpp).
    throw InvalidArgument("GPU offload: the GPU backend has no sliding-window KV cache (it keeps the whole cache)");
  }
  check_view(batch, kv);
  const bool cache = kv.mask != nullptr;
  rows_as_steps_ = batch.rows_as_steps && batch.n_tokens > 1 && !exact_products();
  lin_->set_rows_as_steps(rows_as_steps_);
  split_groups_.clear();
  step_len_.clear();
  AttentionPlan plan;
  if (cache && rows_as_steps_) {
    plan = plan_rows_as_steps(batch, kv);  // sets n_split_ (and max_len_)
  } else {
    if (cache) plan = plan_attention(kv.kv_begin, kv.kv_len, batch.n_tokens);
  }
  n_q_tiles_ = static_cast<int64_t>(plan.q_tiles.size() / 2);
  n_decode_ = static_cast<int64_t>(plan.decode_tokens.size());
  // Long ranges of few decode tokens: the decode attention splits them over the cells.
  if (!(cache && rows_as_steps_)) n_split_ = cache ? attention_decode_splits(n_decode_, dims_.n_head, max_len_) : 1;
  scratch(kSplit, attention_decode_scratch_floats(n_decode_, dims_.n_head, dims_.head_dim, n_split_));
  stage(batch, kv, plan);
  stage_lora(batch);
  choose_mode(batch, kv);
}

void CudaBackend::check_view(const backend::ForwardBatch& batch, const backend::KvView& kv) {
  const int64_t n = batch.n_tokens, n_kv = kv.n_kv;
  for (int64_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= dims_.n_vocab) {
      throw InvalidArgument("token id " + std::to_string(batch.tokens[t]) + " is outside the vocabulary (0.." +
                            std::to_string(dims_.n_vocab - 1) + ")");
    }
  }
  // The cache view (decoders): each token's cells, the view's ranges or all of [0, n_kv).
  const bool cache = kv.mask != nullptr;
  if (cache && kv.n_cells != n_cells_) {
    throw InvalidArgument("GPU backend: the cache size differs from the one allocated");
  }
  const bool ranges = kv.kv_begin != nullptr;
  mask_stride_ = ranges ? kv.mask_stride : n_kv;
  max_len_ = 0;
  for (int64_t t = 0; cache && t < n; ++t) {
    const int64_t b = ranges ? kv.kv_begin[t] : 0, len = ranges ? kv.kv_len[t] : n_kv;
    if (b < 0 || len < 0 || b + len > n_kv || len > mask_stride_) {
      throw InvalidArgument("GPU backend: token " + std::to_string(t) + " reads cells outside the cache view");
    }
    max_len_ = std::max(max_len_, len);
  }
}

void CudaBackend::stage(const backend::ForwardBatch& batch, const backend::KvView& kv, const AttentionPlan& plan) {
  const int64_t n = batch.n_tokens, n_out = batch.n_out, n_kv = kv.n_kv;
  const bool cache = kv.mask != nullptr, ranges = kv.kv_begin != nullptr;
  // Host inputs, staged in one upload: ids, cells, ranges, the attention
  // plan, RoPE tables, masks (last: the others keep their addresses as they
  // grow, which the decode graphs rely on).
  const int64_t mask_floats = cache ? n * mask_stride_ : 0;
  const int64_t swa_floats = cache && kv.mask_swa != nullptr ? mask_floats : 0;
  const int64_t chunk_floats = cache && kv.mask_chunk != nullptr ? mask_floats : 0;
  // The RoPE tables of the previous step's configurations come along
  // (prepare_rope then finds them staged: one copy per step).
  int64_t rope_floats = 0;
  for (const backend::RopeConfig& c : known_ropes_) rope_floats += 2 * n * (c.n_rot / 2) + 4;
  const size_t staged_bytes = 16 * (15 + known_ropes_.size()) + static_cast<size_t>(11 * n + n_out + 1) * sizeof(int32_t) +
                              static_cast<size_t>(mask_floats + swa_floats + chunk_floats + rope_floats + 3) * sizeof(float);
  host_staged_.reserve(staged_bytes);
  staged_.reserve(staged_bytes);
  uint8_t* hp = host_staged_.as<uint8_t>();
  int32_t* h_tokens = carve<int32_t>(hp, n);
  int32_t* h_pos = carve<int32_t>(hp, n);
  int32_t* h_zeros = carve<int32_t>(hp, n);
  int32_t* h_seq = carve<int32_t>(hp, n);
  int32_t* h_slots = carve<int32_t>(hp, n);
  int32_t* h_rows = carve<int32_t>(hp, n_out);
  int32_t* h_begin = carve<int32_t>(hp, n);
  int32_t* h_len = carve<int32_t>(hp, n);
  int32_t* h_tiles = carve<int32_t>(hp, 2 * n);
  int32_t* h_listed = carve<int32_t>(hp, n);
  for (const backend::RopeConfig& c : known_ropes_) {
    float* t = carve<float>(hp, 2 * n * (c.n_rot / 2));
    cpu::rope_table(c, batch.pos, n, t, t + n * (c.n_rot / 2));
  }
  float* h_mask = carve<float>(hp, mask_floats);
  float* h_mask_swa = carve<float>(hp, swa_floats);
  float* h_mask_chunk = carve<float>(hp, chunk_floats);
  std::memcpy(h_tokens, batch.tokens, static_cast<size_t>(n) * sizeof(int32_t));
  std::memcpy(h_pos, batch.pos, static_cast<size_t>(n) * sizeof(int32_t));
  std::fill_n(h_zeros, n, 0);
  if (batch.seq != nullptr) std::memcpy(h_seq, batch.seq, static_cast<size_t>(n) * sizeof(int32_t));
  if (n_out > 0) std::memcpy(h_rows, batch.out_rows, static_cast<size_t>(n_out) * sizeof(int32_t));
  if (cache) {
    std::memcpy(h_slots, kv.slots, static_cast<size_t>(n) * sizeof(int32_t));
    for (int64_t t = 0; t < n; ++t) {
      h_begin[t] = ranges ? kv.kv_begin[t] : 0;
      h_len[t] = !step_len_.empty() ? step_len_[static_cast<size_t>(t)] : ranges ? kv.kv_len[t] : static_cast<int32_t>(n_kv);
    }
    std::memcpy(h_mask, kv.mask, static_cast<size_t>(mask_floats) * sizeof(float));
    if (swa_floats > 0) std::memcpy(h_mask_swa, kv.mask_swa, static_cast<size_t>(swa_floats) * sizeof(float));
    if (chunk_floats > 0) std::memcpy(h_mask_chunk, kv.mask_chunk, static_cast<size_t>(chunk_floats) * sizeof(float));
    std::copy(plan.q_tiles.begin(), plan.q_tiles.end(), h_tiles);
    std::copy(plan.decode_tokens.begin(), plan.decode_tokens.end(), h_listed);
  }
  const size_t used = static_cast<size_t>(hp - host_staged_.as<uint8_t>());
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(staged_.as(), host_staged_.as(), used, cudaMemcpyHostToDevice, stream_));
  uint8_t* dp = staged_.as<uint8_t>();
  in_.tokens = carve<int32_t>(dp, n);
  in_.pos = carve<int32_t>(dp, n);
  in_.zeros = carve<int32_t>(dp, n);
  in_.seq = carve<int32_t>(dp, n);
  if (batch.seq == nullptr) in_.seq = nullptr;
  in_.slots = carve<int32_t>(dp, n);
  in_.rows = carve<int32_t>(dp, n_out);
  in_.begin = carve<int32_t>(dp, n);
  in_.len = carve<int32_t>(dp, n);
  in_.tiles = carve<int32_t>(dp, 2 * n);
  in_.listed = carve<int32_t>(dp, n);
  rope_tables_.clear();
  for (const backend::RopeConfig& c : known_ropes_) rope_tables_.push_back(carve<float>(dp, 2 * n * (c.n_rot / 2)));
  n_staged_ropes_ = static_cast<int>(rope_tables_.size());
  in_.mask = carve<float>(dp, mask_floats);
  in_.mask_swa = carve<float>(dp, swa_floats);
  if (kv.mask_swa == nullptr) in_.mask_swa = nullptr;
  in_.mask_chunk = carve<float>(dp, chunk_floats);
  if (kv.mask_chunk == nullptr) in_.mask_chunk = nullptr;
}

void CudaBackend::choose_mode(const backend::ForwardBatch& batch, const backend::KvView& kv) {
  // One-token steps: replayed from the graph of their shape, captured the
  // second time a shape runs (the first allocates what it needs and tells
  // whether it synchronises with the host).
  key_ = {batch.n_tokens, batch.n_out, kv.n_kv, max_len_, mask_stride_};
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
  const int32_t* rows = ids == backend::Ids::Tokens ? in_.tokens : ids == backend::Ids::Positions ? in_.pos : in_.zeros;
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
