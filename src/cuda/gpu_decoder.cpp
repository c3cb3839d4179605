#include "cuda/gpu_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "cpu/rope.h"
#include "cuda/check.h"
#include "cuda/gpu_moe.h"
#include "cuda/ops.h"
#include "model/weights.h"

namespace ferrite::cuda {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int64_t kQ8_0Block = 32, kQ8KBlock = 256;  // elements per 8-bit activation block

bool dense_decoder(const std::string& arch) {
  return arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "qwen2moe" || arch == "qwen3moe";
}

std::string layer_name(int64_t il, const char* s) { return model::WeightBinder::layer_name(il, s); }

std::string mib(uint64_t b) { return std::to_string(static_cast<int64_t>(std::llround(b / kMiB))) + " MiB"; }

// Sets out to the input form a product with weights of type t reads from
// act (8-bit blocks or f16), for a row kernel to write beside its output;
// false where there is none or the row length does not fit it.
bool fused_out(TensorType t, Activation& act, ActOut& out) {
  switch (t) {
    case TensorType::Q4_0:
    case TensorType::Q5_0:
    case TensorType::Q8_0:
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::Q4_K:
    case TensorType::Q5_K:
    case TensorType::Q6_K: {
      // (Q4_1/Q5_1 read Q8_1 blocks, which the fused kernels do not write.)
      out.format = act_format_for(t);
      if (act.k() % (out.format == ActFormat::Q8_0 ? kQ8_0Block : kQ8KBlock) != 0) return false;
      out.quant = act.quant_buffers(out.format);
      break;
    }
    case TensorType::F16:
      out.f16 = act.f16_buffer();
      break;
    default:
      return false;
  }
  return act_out_supports(out, act.k());
}

void mark_made(Activation& act, const ActOut& out) {
  if (out.f16 != nullptr) {
    act.mark_f16();
  } else {
    act.mark_quantized(out.format);
  }
}

template <typename T>
T* carve(uint8_t*& p, int64_t n) {
  T* out = reinterpret_cast<T*>(p);
  p += (static_cast<size_t>(n) * sizeof(T) + 15) / 16 * 16;
  return out;
}

}  // namespace

std::unique_ptr<model::Architecture> make_decoder(const model::Model& m, const OffloadParams& p) {
  return std::make_unique<GpuDecoder>(m, p);
}

GpuDecoder::GpuDecoder(const model::Model& m, const OffloadParams& p)
    : model_(m), hp_(m.hparams()), n_cells_(p.n_cells) {
  const model::HParams& hp = hp_;
  if (!dense_decoder(hp.arch)) {
    throw InvalidArgument("GPU offload: architecture '" + hp.arch +
                          "' is not supported on the GPU yet (llama, qwen2, qwen3 and their MoE forms are)");
  }
  if (p.n_gpu_layers < -1 || p.n_gpu_layers == 0) {
    throw InvalidArgument("GPU offload: -ngl " + std::to_string(p.n_gpu_layers) + " is not a number of layers to offload");
  }
  const int64_t n_gpu = p.n_gpu_layers < 0 ? hp.n_layer : std::min<int64_t>(p.n_gpu_layers, hp.n_layer);
  first_gpu_layer_ = hp.n_layer - n_gpu;
  if (n_cells_ <= 0) throw InvalidArgument("GPU offload: the context size must be positive");
  if (device_count() <= p.device) throw InvalidArgument("GPU offload: no CUDA device " + std::to_string(p.device));
  FERRITE_CUDA_CHECK(cudaSetDevice(p.device));

  // Fit check: weights + KV cache of the GPU layers + scratch against the free device memory.
  for (TensorType t : {p.type_k, p.type_v}) {
    if (!kv_cache_gpu_supported(t)) {
      throw InvalidArgument("GPU offload: KV cache type " + tensor_type_name(t) + " is not supported on the GPU (" +
                            kv_cache_gpu_type_names() + ")");
    }
  }
  k_cache_ref_.type = p.type_k;
  v_cache_ref_.type = p.type_v;
  k_cache_ref_.row_bytes = kv_cache_row_bytes(p.type_k, hp.n_embd_kv());  // throws for a width not of whole blocks
  v_cache_ref_.row_bytes = kv_cache_row_bytes(p.type_v, hp.n_embd_kv());
  const FitReport fit = fit_report(m, n_cells_, p.device, p.type_k, p.type_v);
  const uint64_t need = fit.needed(static_cast<int>(n_gpu));
  if (need > fit.free_bytes) {
    throw ModelError("GPU offload: " + std::to_string(n_gpu) + " of " + std::to_string(hp.n_layer) +
                     " layers do not fit: they need " + mib(need) + " (weights and KV cache of " +
                     std::to_string(n_cells_) + " cells, output " + mib(fit.output_bytes) + ", scratch " +
                     mib(fit.scratch_bytes) + ") but " + mib(fit.free_bytes) + " of " + mib(fit.total_bytes) +
                     " are free; at most " + std::to_string(fit.max_layers) + " layers fit (--fit picks that)");
  }
  if (first_gpu_layer_ > 0) front_ = std::make_unique<CpuFront>(m, first_gpu_layer_);

  buffers_.reserve(static_cast<size_t>(n_gpu) * 16 + 8);
  if (first_gpu_layer_ == 0) {
    tok_embd_ = upload("token_embd.weight", true);
    if (tok_embd_.k != hp.n_embd) throw ModelError("token_embd.weight: row length differs from n_embd");
  }
  output_norm_ = upload("output_norm.weight", true);
  output_ = upload("output.weight", false);
  if (output_.data == nullptr) {
    output_ = first_gpu_layer_ == 0 ? tok_embd_ : upload("token_embd.weight", true);  // tied embeddings
  }
  if (const gguf::TensorInfo* rf = m.file().find_tensor("rope_freqs.weight")) {
    const auto* f = reinterpret_cast<const float*>(rf->data);
    rope_freqs_.assign(f, f + hp.rope.n_rot / 2);
  }
  if (hp.n_expert > 0) {
    moe_ = std::make_unique<GpuMoe>(m, first_gpu_layer_);  // the expert layers' FFN
    weight_bytes_ += moe_->weight_bytes();
  }
  layers_.resize(static_cast<size_t>(n_gpu));
  for (int64_t il = first_gpu_layer_; il < hp.n_layer; ++il) {
    Layer& L = layers_[static_cast<size_t>(il - first_gpu_layer_)];
    L.attn_norm = upload(layer_name(il, "attn_norm.weight"), true);
    const std::string qn = layer_name(il, "attn_q.weight"), kn = layer_name(il, "attn_k.weight"),
                      vn = layer_name(il, "attn_v.weight");
    if (stackable({qn, kn, vn}) || !stackable({qn, kn})) {
      L.qkv = upload_stacked({qn, kn, vn}, {&L.wq, &L.wk, &L.wv});
    } else {
      L.qk = upload_stacked({qn, kn}, {&L.wq, &L.wk});
      L.wv = upload(vn, true);
    }
    L.wo = upload(layer_name(il, "attn_output.weight"), true);
    L.bq = upload(layer_name(il, "attn_q.bias"), false);
    L.bk = upload(layer_name(il, "attn_k.bias"), false);
    L.bv = upload(layer_name(il, "attn_v.bias"), false);
    L.q_norm = upload(layer_name(il, "attn_q_norm.weight"), false);
    L.k_norm = upload(layer_name(il, "attn_k_norm.weight"), false);
    L.bo = upload(layer_name(il, "attn_output.bias"), false);
    L.ffn_norm = upload(layer_name(il, "ffn_norm.weight"), true);
    if (moe_ && moe_->has(il)) continue;
    L.gate_up = upload_stacked({layer_name(il, "ffn_gate.weight"), layer_name(il, "ffn_up.weight")},
                               {&L.gate, &L.up});
    L.down = upload(layer_name(il, "ffn_down.weight"), true);
    n_ff_ = std::max(n_ff_, L.up.n);
  }
  k_cache_.resize(static_cast<size_t>(n_gpu));
  v_cache_.resize(static_cast<size_t>(n_gpu));
  const size_t k_layer = static_cast<size_t>(n_cells_ * k_cache_ref_.row_bytes);  // [n_cells, K row bytes]
  const size_t v_layer = static_cast<size_t>(n_cells_ * v_cache_ref_.row_bytes);  // [n_cells, V row bytes]
  for (size_t i = 0; i < k_cache_.size(); ++i) {
    k_cache_[i].resize(k_layer);
    v_cache_[i].resize(v_layer);
    // Cells never written are masked, but keep them finite (0 * NaN would poison sums; zero blocks are zeros).
    FERRITE_CUDA_CHECK(cudaMemset(k_cache_[i].as(), 0, k_layer));
    FERRITE_CUDA_CHECK(cudaMemset(v_cache_[i].as(), 0, v_layer));
  }
  FERRITE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  const char* graphs_env = std::getenv("FERRITE_CUDA_GRAPHS");
  use_graphs_ = graphs_env == nullptr || std::string(graphs_env) != "0";
  const char* fuse_env = std::getenv("FERRITE_CUDA_FUSE");
  fuse_ = fuse_env == nullptr || std::string(fuse_env) != "0";
  fuse_attn_ = fuse_ && (fuse_env == nullptr || std::string(fuse_env) != "noattn");
  fuse_rope_ = fuse_ && (fuse_env == nullptr || std::string(fuse_env) != "norope");
  linear_ = new LinearRunner(stream_);
}

GpuDecoder::~GpuDecoder() {
  for (auto& [key, g] : graphs_) {
    if (g.exec != nullptr) cudaGraphExecDestroy(g.exec);
  }
  delete linear_;
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

void GpuDecoder::rotate_cached_keys(int64_t layer, std::span<const int32_t> cells,
                                    const std::function<void(uint8_t* row)>& rotate) {
  if (layer < first_gpu_layer_ || layer >= hp_.n_layer) {
    throw InvalidArgument("layer " + std::to_string(layer) + " keeps its keys on the CPU");
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // no pass in flight reads the rows
  uint8_t* base = k_cache_[static_cast<size_t>(layer - first_gpu_layer_)].as<uint8_t>();
  const size_t row = static_cast<size_t>(k_cache_ref_.row_bytes);
  std::vector<uint8_t> host;
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
    for (size_t k = 0; k < n; ++k) rotate(host.data() + k * row);
    FERRITE_CUDA_CHECK(cudaMemcpy(dev, host.data(), n * row, cudaMemcpyHostToDevice));
    i = j;
  }
}

void GpuDecoder::ensure_workspace(int64_t n, int64_t n_out, int64_t n_kv) {
  const model::HParams& hp = hp_;
  auto f32 = [](int64_t count) { return static_cast<size_t>(count) * sizeof(float); };
  s_.x.reserve(f32(n * hp.n_embd));
  s_.h.reserve(f32(n * hp.n_embd));
  s_.qkv.reserve(f32(n * (hp.n_embd_q() + 2 * hp.n_embd_kv())));
  s_.attn.reserve(f32(n * hp.n_embd_q()));
  s_.gate_up.reserve(f32(2 * n * n_ff_));
  s_.rows.reserve(f32(std::max<int64_t>(n_out, 1) * hp.n_embd));
  s_.logits.reserve(f32(std::max<int64_t>(n_out, 1) * hp.n_vocab));
}

void GpuDecoder::forward(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                         model::Workspace& ws, float* logits) const {
  // The decoder's device state (cache, scratch) changes with every pass;
  // a context owns its decoder and runs one pass at a time.
  const_cast<GpuDecoder*>(this)->forward_impl(batch, kv, pool, ws, logits);
}

void GpuDecoder::forward_impl(const model::ForwardBatch& batch, const model::KvView& kv, cpu::ThreadPool& pool,
                              model::Workspace& ws, float* logits) {
  const model::HParams& hp = hp_;
  const int64_t n = batch.n_tokens, n_out = batch.n_out, n_kv = kv.n_kv;
  const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_q(), n_ekv = hp.n_embd_kv(), hd = hp.head_dim;
  if (n <= 0) return;
  if (kv.n_cells != n_cells_) throw InvalidArgument("GPU decoder: the cache size differs from the one allocated");
  // Each token's cells (model/forward.h): the view's ranges, or all of [0, n_kv).
  const bool ranges = kv.kv_begin != nullptr;
  const int64_t mask_stride = ranges ? kv.mask_stride : n_kv;
  int64_t max_len = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t b = ranges ? kv.kv_begin[t] : 0, len = ranges ? kv.kv_len[t] : n_kv;
    if (b < 0 || len < 0 || b + len > n_kv || len > mask_stride) {
      throw InvalidArgument("GPU decoder: token " + std::to_string(t) + " reads cells outside the cache view");
    }
    max_len = std::max(max_len, len);
  }
  const AttentionPlan plan = plan_attention(kv.kv_begin, kv.kv_len, n);  // which kernel takes which tokens
  for (int64_t t = 0; t < n; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= hp.n_vocab) {
      throw InvalidArgument("token id " + std::to_string(batch.tokens[t]) + " is outside the vocabulary (0.." +
                            std::to_string(hp.n_vocab - 1) + ")");
    }
  }
  ensure_workspace(n, n_out, mask_stride);
  cudaStream_t st = stream_;
  // Long ranges of few decode tokens: the decode attention splits them over the cells.
  const int64_t n_decode = static_cast<int64_t>(plan.decode_tokens.size());
  const int64_t n_split = attention_decode_splits(n_decode, hp.n_head, max_len);
  s_.attn_split.reserve(static_cast<size_t>(attention_decode_scratch_floats(n_decode, hp.n_head, hd, n_split)) *
                        sizeof(float));

  // Host inputs, staged in one upload: tokens, slots, out rows, cell ranges,
  // RoPE tables, mask (last: the others keep their addresses as it grows,
  // which the decode graphs rely on).
  cpu::RopeConfig rc;
  rc.n_rot = hp.rope.n_rot;
  rc.neox = hp.rope.neox;
  rc.freq_base = hp.rope.freq_base;
  rc.freq_scale = hp.rope.freq_scale;
  rc.ext_factor = hp.rope.yarn_ext_factor;
  rc.attn_factor = hp.rope.yarn_attn_factor;
  rc.beta_fast = hp.rope.yarn_beta_fast;
  rc.beta_slow = hp.rope.yarn_beta_slow;
  rc.n_ctx_orig = hp.rope.n_ctx_orig;
  rc.freq_factors = rope_freqs_.empty() ? nullptr : rope_freqs_.data();
  const int64_t half = rc.n_rot / 2;
  const size_t staged_bytes = 16 * 10 + static_cast<size_t>(8 * n + n_out) * sizeof(int32_t) +
                              static_cast<size_t>(n * mask_stride + 2 * n * half) * sizeof(float);
  host_staged_.reserve(staged_bytes);
  s_.staged.reserve(staged_bytes);
  uint8_t* hp_ptr = host_staged_.as<uint8_t>();
  int32_t* h_tokens = carve<int32_t>(hp_ptr, n);
  int32_t* h_slots = carve<int32_t>(hp_ptr, n);
  int32_t* h_rows = carve<int32_t>(hp_ptr, std::max<int64_t>(n_out, 1));
  int32_t* h_begin = carve<int32_t>(hp_ptr, n);
  int32_t* h_len = carve<int32_t>(hp_ptr, n);
  int32_t* h_tiles = carve<int32_t>(hp_ptr, 2 * n);
  int32_t* h_listed = carve<int32_t>(hp_ptr, n);
  float* h_cos = carve<float>(hp_ptr, n * half);
  float* h_sin = carve<float>(hp_ptr, n * half);
  float* h_mask = carve<float>(hp_ptr, n * mask_stride);
  std::memcpy(h_tokens, batch.tokens, static_cast<size_t>(n) * sizeof(int32_t));
  std::memcpy(h_slots, kv.slots, static_cast<size_t>(n) * sizeof(int32_t));
  if (n_out > 0) std::memcpy(h_rows, batch.out_rows, static_cast<size_t>(n_out) * sizeof(int32_t));
  for (int64_t t = 0; t < n; ++t) {
    h_begin[t] = ranges ? kv.kv_begin[t] : 0;
    h_len[t] = ranges ? kv.kv_len[t] : static_cast<int32_t>(n_kv);
  }
  std::memcpy(h_mask, kv.mask, static_cast<size_t>(n * mask_stride) * sizeof(float));
  std::copy(plan.q_tiles.begin(), plan.q_tiles.end(), h_tiles);
  std::copy(plan.decode_tokens.begin(), plan.decode_tokens.end(), h_listed);
  cpu::rope_table(rc, batch.pos, n, h_cos, h_sin);
  const size_t used = static_cast<size_t>(hp_ptr - host_staged_.as<uint8_t>());
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(s_.staged.as(), host_staged_.as(), used, cudaMemcpyHostToDevice, st));
  uint8_t* dp = s_.staged.as<uint8_t>();
  const int32_t* d_tokens = carve<int32_t>(dp, n);
  const int32_t* d_slots = carve<int32_t>(dp, n);
  const int32_t* d_rows = carve<int32_t>(dp, std::max<int64_t>(n_out, 1));
  const int32_t* d_begin = carve<int32_t>(dp, n);
  const int32_t* d_len = carve<int32_t>(dp, n);
  const int32_t* d_tiles = carve<int32_t>(dp, 2 * n);
  const int32_t* d_listed = carve<int32_t>(dp, n);
  const float* d_cos = carve<float>(dp, n * half);
  const float* d_sin = carve<float>(dp, n * half);
  const float* d_mask = carve<float>(dp, n * mask_stride);

  float* x = s_.x.as<float>();
  float* h = s_.h.as<float>();
  // [n, n_q], [n, n_ekv], [n, n_ekv] one after another: for one token, the
  // output row of the stacked product.
  float* q = s_.qkv.as<float>();
  float* k = q + n * n_q;
  float* v = k + n * n_ekv;
  float* attn = s_.attn.as<float>();
  float* gate = s_.gate_up.as<float>();  // [n, n_ff_], then up [n, n_ff_]
  float* up = gate + n * n_ff_;
  const float eps = hp.norm_rms_eps;
  if (front_) {
    // The CPU layers, then the residual stream crosses to the device.
    const float* x_host = front_->run(batch, kv, pool, ws);  // [n, n_embd]
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(x, x_host, static_cast<size_t>(n * n_embd) * sizeof(float),
                                       cudaMemcpyHostToDevice, st));
  }

  // The kernels of the pass (run directly, or captured into a graph).
  auto body = [&]() {
  if (!front_) get_rows(tok_embd_, d_tokens, n, x, st);

  AttentionParams ap;
  ap.mask = d_mask;
  ap.n_kv = n_kv;
  ap.kv_begin = d_begin;
  ap.kv_len = d_len;
  ap.mask_stride = mask_stride;
  ap.max_len = max_len;
  ap.q_tiles = d_tiles;
  ap.n_q_tiles = static_cast<int64_t>(plan.q_tiles.size() / 2);
  ap.decode_tokens = d_listed;
  ap.n_decode_tokens = static_cast<int64_t>(plan.decode_tokens.size());
  ap.n_split = n_split;
  ap.split_scratch = n_split > 1 ? s_.attn_split.as<float>() : nullptr;
  ap.n_tokens = n;
  ap.n_head = hp.n_head;
  ap.n_head_kv = hp.n_head_kv;
  ap.head_dim = hd;
  ap.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  ap.softcap = hp.attn_softcap;
  ap.q = q;
  ap.out = attn;
  LinearRunner& lin = *linear_;
  auto f32 = [](const GpuMatrix& g) { return reinterpret_cast<const float*>(g.data); };
  // Outside the exact mode, the norms and SwiGLU also write the input form
  // of the product after them (fused_ops.cu), and a one-token pass rotates
  // q|k and stores k, v in one launch.
  const bool fuse = fuse_ && !exact_products();
  const bool typed_cache = k_cache_ref_.type != TensorType::F16 || v_cache_ref_.type != TensorType::F16;
  // dst = rms_norm(x) * w, as the activations act of a product with weights of type t.
  auto norm = [&](const GpuMatrix& w, float* dst, Activation& act, TensorType t) {
    act.set(dst, n, n_embd);
    ActOut out;
    if (fuse && fused_out(t, act, out)) {
      rms_norm_act(x, f32(w), eps, n, n_embd, dst, out, st);
      mark_made(act, out);
    } else {
      rms_norm(x, f32(w), eps, n, n_embd, dst, st);
    }
  };
  for (size_t il = 0; il < layers_.size(); ++il) {  // GPU layer il is model layer first_gpu_layer_ + il
    const Layer& L = layers_[il];
    norm(L.attn_norm, h, s_.act_h, L.wq.type);
    uint16_t* kc = k_cache_[il].as<uint16_t>();
    uint16_t* vc = v_cache_[il].as<uint16_t>();
    // One token: Q, K and V in one launch (the rows of q|k|v are its output
    // row); with adjacent-pair RoPE and an f16 cache it also rotates q, k and
    // stores k, v (gemv_quant_rope: no rope_store_kv launch).
    const bool qkv_one =
        n == 1 && L.qkv.data != nullptr && L.bq.data == nullptr && L.bk.data == nullptr && L.bv.data == nullptr;
    RopeKvOut rk;
    bool qkv_rope = false;
    if (qkv_one && fuse && fuse_rope_ && !typed_cache && !rc.neox && L.q_norm.data == nullptr &&
        L.k_norm.data == nullptr) {
      rk.cos_t = d_cos;
      rk.sin_t = d_sin;
      rk.n_q = n_q;
      rk.n_kv = n_ekv;
      rk.head_dim = hd;
      rk.half = rc.n_rot / 2;
      rk.slot = d_slots;
      rk.k_cache = kc;
      rk.v_cache = vc;
      qkv_rope = lin.takes_rope(L.qkv, n, rk);
    }
    if (qkv_one) {
      lin.run(L.qkv, s_.act_h, q, false, nullptr, qkv_rope ? &rk : nullptr);
    } else if (n == 1 && L.qk.data != nullptr && L.bq.data == nullptr && L.bk.data == nullptr) {
      lin.run(L.qk, s_.act_h, q, false);  // q | k
      lin.run(L.wv, s_.act_h, v, false, L.bv.data ? f32(L.bv) : nullptr);
    } else {
      lin.run(L.wq, s_.act_h, q, false, L.bq.data ? f32(L.bq) : nullptr);
      lin.run(L.wk, s_.act_h, k, false, L.bk.data ? f32(L.bk) : nullptr);
      lin.run(L.wv, s_.act_h, v, false, L.bv.data ? f32(L.bv) : nullptr);
    }
    if (L.q_norm.data) rms_norm(q, f32(L.q_norm), eps, n * hp.n_head, hd, q, st);
    if (L.k_norm.data) rms_norm(k, f32(L.k_norm), eps, n * hp.n_head_kv, hd, k, st);
    if (qkv_rope) {
      // (done by the product)
    } else if (n == 1 && fuse && !typed_cache) {
      // q | k: one row of heads, rotated and k, v stored by one launch.
      rope_store_kv(q, v, d_cos, d_sin, hp.n_head, hp.n_head_kv, hd, rc.n_rot, rc.neox, d_slots, kc, vc, st);
    } else {
      if (n == 1) {
        rope(q, d_cos, d_sin, 1, hp.n_head + hp.n_head_kv, hd, rc.n_rot, rc.neox, st);  // q | k: one row of heads
      } else {
        rope(q, d_cos, d_sin, n, hp.n_head, hd, rc.n_rot, rc.neox, st);
        rope(k, d_cos, d_sin, n, hp.n_head_kv, hd, rc.n_rot, rc.neox, st);
      }
      if (typed_cache) {
        // A block-type K or V: the rows quantized into the cache.
        KvCacheRef kr = k_cache_ref_, vr = v_cache_ref_;
        kr.data = kc;
        vr.data = vc;
        store_kv_typed(k, v, d_slots, n, n_ekv, kr, vr, st);
      } else {
        store_kv(k, v, d_slots, n, n_ekv, kc, vc, st);
      }
    }
    ap.k = kc;
    ap.v = vc;
    ap.k_type = k_cache_ref_.type;
    ap.v_type = v_cache_ref_.type;
    ap.k_row_bytes = k_cache_ref_.row_bytes;
    ap.v_row_bytes = v_cache_ref_.row_bytes;
    s_.act_attn.set(attn, n, n_q);
    // The decode kernel writes the Q8_0 blocks the output product reads (one
    // quantizer launch less per layer).
    const bool wo_q8 = L.wo.type == TensorType::Q4_0 || L.wo.type == TensorType::Q5_0 || L.wo.type == TensorType::Q8_0;
    const bool attn_q8 = fuse && fuse_attn_ && wo_q8 && n_q % kQ8_0Block == 0 && attention_decode_takes_all(ap);
    ap.out_q8 = attn_q8 ? s_.act_attn.quant_buffers(ActFormat::Q8_0) : QuantAct{};
    attention(ap, st);
    if (attn_q8) s_.act_attn.mark_quantized(ActFormat::Q8_0);
    lin.run(L.wo, s_.act_attn, x, true);  // x += attn · Wo^T
    if (L.bo.data) add_bias(x, f32(L.bo), n, n_embd, st);  // x += bo

    const int64_t il_model = first_gpu_layer_ + static_cast<int64_t>(il);
    if (moe_ && moe_->has(il_model)) {
      norm(L.ffn_norm, h, s_.act_h, moe_->input_type(il_model));
      moe_->run(il_model, s_.act_h, x, lin);  // x += experts
      continue;
    }
    norm(L.ffn_norm, h, s_.act_h, L.gate.type);
    if (n == 1 && L.gate_up.data != nullptr) {
      lin.run(L.gate_up, s_.act_h, gate);  // gate | up
    } else {
      lin.run(L.gate, s_.act_h, gate);
      lin.run(L.up, s_.act_h, up);
    }
    s_.act_ffn.set(up, n, L.up.n);
    ActOut ffn_out;
    if (fuse && fused_out(L.down.type, s_.act_ffn, ffn_out)) {
      swiglu_act(gate, up, n, L.up.n, up, ffn_out, st);
      mark_made(s_.act_ffn, ffn_out);
    } else {
      swiglu(gate, up, n, L.up.n, up, st);
    }
    lin.run(L.down, s_.act_ffn, x, true);  // x += ffn
  }

  if (n_out > 0) {
    float* rows = s_.rows.as<float>();
    gather_rows(x, d_rows, n_out, n_embd, rows, st);
    rms_norm(rows, f32(output_norm_), eps, n_out, n_embd, rows, st);
    s_.act_rows.set(rows, n_out, n_embd);
    lin.run(output_, s_.act_rows, s_.logits.as<float>());
  }
  };

  // Expert layers whose ids go through the host cannot be captured.
  if (use_graphs_ && n == 1 && (!moe_ || moe_->device_only(n))) {
    run_graph({n_out, n_kv, max_len, mask_stride}, body);
  } else {
    body();
  }
  const size_t logit_bytes = static_cast<size_t>(n_out * hp.n_vocab) * sizeof(float);
  if (n_out > 0) {
    host_logits_.reserve(logit_bytes);
    FERRITE_CUDA_CHECK(cudaMemcpyAsync(host_logits_.as(), s_.logits.as(), logit_bytes, cudaMemcpyDeviceToHost, st));
  }
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(st));
  if (n_out > 0) std::memcpy(logits, host_logits_.as(), logit_bytes);
}

template <typename Body>
void GpuDecoder::run_graph(const std::array<int64_t, 4>& key, Body& body) {
  Graph& g = graphs_[key];
  if (g.exec != nullptr && g.generation == g_buffer_generation.load()) {
    FERRITE_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
    return;
  }
  if (g.exec != nullptr) {
    cudaGraphExecDestroy(g.exec);
    g.exec = nullptr;
  }
  if (!g.seen) {
    // First run of the shape: directly, so that every buffer it needs is allocated.
    g.seen = true;
    body();
    return;
  }
  const uint64_t generation = g_buffer_generation.load();
  cudaGraph_t graph = nullptr;
  FERRITE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
  try {
    body();
  } catch (...) {
    cudaStreamEndCapture(stream_, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  FERRITE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  if (generation != g_buffer_generation.load()) {
    // A buffer moved while capturing: the graph holds stale addresses.
    cudaGraphDestroy(graph);
    body();
    return;
  }
  const cudaError_t e = cudaGraphInstantiate(&g.exec, graph, 0);
  cudaGraphDestroy(graph);
  FERRITE_CUDA_CHECK(e);
  g.generation = generation;
  FERRITE_CUDA_CHECK(cudaGraphLaunch(g.exec, stream_));
}

}  // namespace ferrite::cuda
