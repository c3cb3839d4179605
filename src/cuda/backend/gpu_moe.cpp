#include "cuda/backend/gpu_moe.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/llama4_ops.h"
#include "cuda/kernels/moe_ops.h"
#include "cuda/kernels/ops.h"

namespace ferrite::cuda {
namespace {

// Slots per token the combine kernel orders (moe.cu kMaxUsed).
constexpr int64_t kMaxExpertsUsed = 64;
constexpr int64_t kQ8_0Block = 32, kQ8KBlock = 256;  // elements per 8-bit activation block

bool float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16; }

// True when the expert products of w can read the expert id on the device.
bool indirect(const GpuMatrix& w) { return float_type(w.type) || gemv_quant_experts_supports(w); }

size_t f32_bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

// up = silu(gate) * up [rows, n], the kernel also writing act's 8-bit form
// for weights of type t (act: up's rows); false, with nothing done, where
// it cannot (float weights, Q8_1 activations, n not a whole number of blocks).
bool swiglu_quantized(TensorType t, const float* gate, float* up, int64_t rows, int64_t n, Activation& act,
                      cudaStream_t st) {
  if (float_type(t)) return false;
  const ActFormat f = act_format_for(t);
  if (f == ActFormat::Q8_1 || n % (f == ActFormat::Q8_K ? kQ8KBlock : kQ8_0Block) != 0) return false;
  ActOut out;
  out.format = f;
  out.quant = act.quant_buffers(f);
  if (!act_out_supports(out, n)) return false;
  swiglu_act(gate, up, rows, n, up, out, st);
  act.mark_quantized(f);
  return true;
}

}  // namespace

GpuMoe::GpuMoe(const backend::ModelDims& dims, WeightStore& weights) : dims_(dims), weights_(weights) {}

const GpuMoe::Layer& GpuMoe::layer(const backend::MoeWeights& w) {
  const auto found = layers_.find(w.gate_inp.info);
  if (found != layers_.end()) return found->second;
  const int64_t n_expert = dims_.n_expert, k_used = dims_.n_expert_used, n_embd = dims_.n_embd;
  if (n_expert < 1 || n_expert > kMoeMaxExperts || k_used < 1 || k_used > n_expert || k_used > kMaxExpertsUsed) {
    throw InvalidArgument("GPU offload: " + std::to_string(k_used) + " of " + std::to_string(n_expert) +
                          " experts per token is not supported on the GPU (at most " +
                          std::to_string(kMaxExpertsUsed) + " of " + std::to_string(kMoeMaxExperts) + ")");
  }
  Layer L;
  L.renorm = w.norm_weights;
  L.route.sigmoid = w.gating == backend::MoeGating::Sigmoid;
  L.route.bias = weights_.vec(w.probs_bias);
  L.route.scale = w.weights_scale;
  L.route.softmax_weight = w.gating == backend::MoeGating::SoftmaxWeight;
  L.route.sparsemixer = w.gating == backend::MoeGating::SparseMixer;
  L.route.jitter = w.jitter;
  L.router_b = weights_.vec(w.gate_inp_b);
  L.gate_b = weights_.vec(w.gate_exps_b);
  L.up_b = weights_.vec(w.up_exps_b);
  L.down_b = weights_.vec(w.down_exps_b);
  L.oai_alpha = w.oai_alpha;
  L.oai_limit = w.oai_limit;
  L.weight_input = w.weight_input;
  L.router = weights_.matrix(w.gate_inp);
  L.gate_up = weights_.experts_gate_up(w.gate_exps, w.up_exps);
  if (L.gate_up.data == nullptr) {
    L.gate = weights_.matrix(w.gate_exps);
    L.up = weights_.matrix(w.up_exps);
  }
  L.down = weights_.matrix(w.down_exps);
  L.n_ff = w.up_exps.ne(1);
  // (the model checked the shapes at bind: model/decoder.cpp)
  if (L.router.n != n_expert || L.router.k != n_embd || L.down.k != L.n_ff || L.down.n != n_expert * n_embd) {
    throw InvalidArgument("GPU MoE: expert tensor shapes do not agree with the model's sizes");
  }
  if (w.shexp.up) {
    L.sh_gate = weights_.matrix(w.shexp.gate);
    L.sh_up = weights_.matrix(w.shexp.up);
    L.sh_down = weights_.matrix(w.shexp.down);
    if (w.shexp_gate_inp) L.sh_inp = weights_.matrix(w.shexp_gate_inp);
    L.n_ff_sh = L.sh_up.n;
  }
  const bool plain = L.gate_b == nullptr && L.up_b == nullptr && L.down_b == nullptr && L.oai_alpha <= 0.0f &&
                     !L.weight_input;
  L.on_device = plain && (L.gate_up.data != nullptr ? indirect(L.gate_up) : indirect(L.gate) && indirect(L.up)) &&
                indirect(L.down);
  return layers_[w.gate_inp.info] = L;
}

GpuMatrix GpuMoe::expert_gate(const Layer& L, int64_t e) {
  return L.gate_up.data != nullptr ? row_slice(L.gate_up, 2 * e * L.n_ff, L.n_ff) : row_slice(L.gate, e * L.n_ff, L.n_ff);
}

GpuMatrix GpuMoe::expert_up(const Layer& L, int64_t e) {
  return L.gate_up.data != nullptr ? row_slice(L.gate_up, (2 * e + 1) * L.n_ff, L.n_ff)
                                   : row_slice(L.up, e * L.n_ff, L.n_ff);
}

bool GpuMoe::device_only(const backend::MoeWeights& w, int64_t n) {
  return n == 1 && !exact_products() && layer(w).on_device;
}

void GpuMoe::reserve(int64_t n, const Layer& L) {
  const int64_t slots = n * dims_.n_expert_used, n_embd = dims_.n_embd;
  logits_.reserve(f32_bytes(n * dims_.n_expert));
  ids_.reserve(static_cast<size_t>(slots) * sizeof(int32_t));
  weights_buf_.reserve(f32_bytes(slots));
  rows_.reserve(2 * static_cast<size_t>(slots) * sizeof(int32_t));
  in_.reserve(f32_bytes(slots * n_embd));
  gate_.reserve(f32_bytes(std::max(2 * slots * L.n_ff, n * L.n_ff_sh)));  // decode: gate | up
  up_.reserve(f32_bytes(std::max(slots * L.n_ff, n * L.n_ff_sh)));
  ys_.reserve(f32_bytes(slots * n_embd));
  sh_.reserve(f32_bytes(n * n_embd));
  sh_gate_.reserve(f32_bytes(n));
}

void GpuMoe::run(const backend::MoeWeights& w, Activation& act, float* x, LinearRunner& lin) {
  const Layer& L = layer(w);
  const int64_t n = act.m();
  if (n <= 0) return;
  if (act.k() != dims_.n_embd) throw InvalidArgument("GPU MoE: input width differs from n_embd");
  cudaStream_t st = lin.stream();
  reserve(n, L);
  // 1. Router: logits [n, n_expert] -> ids, weights [n, k_used].
  lin.run(L.router, act, logits_.as<float>());
  if (L.router_b != nullptr) add_bias(logits_.as<float>(), L.router_b, n, dims_.n_expert, st);
  moe_route(logits_.as<float>(), n, dims_.n_expert, dims_.n_expert_used, L.renorm, ids_.as<int32_t>(),
            weights_buf_.as<float>(), st, L.route);
  // 2. The experts' outputs ys, then the shared expert.
  if (L.on_device && device_only(w, n)) {
    experts_on_device(L, act, n, lin);
  } else {
    experts_grouped(L, act, n, lin);
  }
  if (L.sh_up.data != nullptr) shared_expert(L, act, n, lin);
  // 3. x += the weighted experts (+ the gated shared expert).
  MoeCombine c;
  c.ys = ys_.as<float>();
  c.rows = use_rows_ ? rows_.as<int32_t>() + n * dims_.n_expert_used : nullptr;
  c.ids = ids_.as<int32_t>();
  c.weights = weights_buf_.as<float>();
  c.sh = L.sh_up.data != nullptr ? sh_.as<float>() : nullptr;
  c.sh_gate = L.sh_inp.data != nullptr ? sh_gate_.as<float>() : nullptr;
  c.n = n;
  c.k_used = dims_.n_expert_used;
  c.n_embd = dims_.n_embd;
  moe_combine(c, x, st);
}

void GpuMoe::experts_on_device(const Layer& L, Activation& act, int64_t n, LinearRunner& lin) {
  cudaStream_t st = lin.stream();
  const int64_t slots = n * dims_.n_expert_used;  // n == 1: slot j is the token's j-th expert
  const int32_t* ids = ids_.as<int32_t>();
  // y [slots, rows] = expert ids[j] of w times activation row j * step of a
  // (split: see moe_ops.h).
  auto product = [&](const GpuMatrix& w, Activation& a, int64_t step, int64_t rows, float* y, int64_t split) {
    if (float_type(w.type)) {
      moe_gemv_float(w, ids, slots, rows, a.x(), step, y, st, split);
    } else {
      gemv_quant_experts(w, ids, slots, rows, a.quantized(act_format_for(w.type), st), step, y, pdl_enabled(), st,
                         split);
    }
  };
  float* gate = gate_.as<float>();  // [slots, n_ff]
  float* up = L.gate_up.data != nullptr ? gate + slots * L.n_ff : up_.as<float>();  // [slots, n_ff]
  if (L.gate_up.data != nullptr) {
    product(L.gate_up, act, 0, 2 * L.n_ff, gate, L.n_ff);  // every gate, then every up
  } else {
    product(L.gate, act, 0, L.n_ff, gate, 0);
    product(L.up, act, 0, L.n_ff, up, 0);
  }
  act_mid_.set(up, slots, L.n_ff);
  if (!swiglu_quantized(L.down.type, gate, up, slots, L.n_ff, act_mid_, st)) swiglu(gate, up, slots, L.n_ff, up, st);
  product(L.down, act_mid_, 1, dims_.n_embd, ys_.as<float>(), 0);  // [slots, n_embd]
  use_rows_ = false;
}

void GpuMoe::experts_grouped(const Layer& L, Activation& act, int64_t n, LinearRunner& lin) {
  cudaStream_t st = lin.stream();
  const int64_t k_used = dims_.n_expert_used, slots = n * k_used, n_expert = dims_.n_expert, n_embd = dims_.n_embd;
  host_ids_.reserve(static_cast<size_t>(slots) * sizeof(int32_t));
  host_rows_.reserve(2 * static_cast<size_t>(slots) * sizeof(int32_t));
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(host_ids_.as(), ids_.as(), static_cast<size_t>(slots) * sizeof(int32_t),
                                     cudaMemcpyDeviceToHost, st));
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(st));
  const int32_t* ids = host_ids_.as<int32_t>();
  // Counting sort of the slots by expert (tokens ascending within one):
  // src[i] = the token of sorted row i, pos[t * k_used + j] = the sorted row of slot j of t.
  std::vector<int64_t> start(static_cast<size_t>(n_expert) + 1, 0);
  for (int64_t i = 0; i < slots; ++i) {
    if (ids[i] < 0 || ids[i] >= n_expert) throw Error("GPU MoE: the router chose expert " + std::to_string(ids[i]));
    ++start[static_cast<size_t>(ids[i]) + 1];
  }
  for (int64_t e = 0; e < n_expert; ++e) start[e + 1] += start[e];
  std::vector<int64_t> cursor(start.begin(), start.end() - 1);
  int32_t* src = host_rows_.as<int32_t>();
  int32_t* pos = src + slots;
  for (int64_t i = 0; i < slots; ++i) {
    const int64_t r = cursor[static_cast<size_t>(ids[i])]++;
    src[r] = static_cast<int32_t>(i / k_used);
    pos[i] = static_cast<int32_t>(r);
  }
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(rows_.as(), host_rows_.as(), 2 * static_cast<size_t>(slots) * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, st));
  // in [slots, n_embd]: the tokens' rows, expert after expert.
  float* in = in_.as<float>();
  float* gate = gate_.as<float>();
  float* up = up_.as<float>();
  float* ys = ys_.as<float>();
  gather_rows(act.x(), rows_.as<int32_t>(), slots, n_embd, in, st);
  // llama4: slot i's weight onto its gathered row pos[i]; the combine then adds the outputs unweighted.
  if (L.weight_input) moe_weight_inputs(in, rows_.as<int32_t>() + slots, weights_buf_.as<float>(), slots, n_embd, st);
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = start[e], cnt = start[e + 1] - start[e];
    if (cnt == 0) continue;
    act_in_.set(in + r0 * n_embd, cnt, n_embd);
    lin.run(expert_gate(L, e), act_in_, gate + r0 * L.n_ff);
    lin.run(expert_up(L, e), act_in_, up + r0 * L.n_ff);
    if (L.gate_b != nullptr) add_bias(gate + r0 * L.n_ff, L.gate_b + e * L.n_ff, cnt, L.n_ff, st);
    if (L.up_b != nullptr) add_bias(up + r0 * L.n_ff, L.up_b + e * L.n_ff, cnt, L.n_ff, st);
  }
  if (L.oai_alpha > 0.0f) {
    swiglu_oai(gate, up, slots * L.n_ff, L.oai_alpha, L.oai_limit, up, st);
  } else {
    swiglu(gate, up, slots, L.n_ff, up, st);
  }
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = start[e], cnt = start[e + 1] - start[e];
    if (cnt == 0) continue;
    act_mid_.set(up + r0 * L.n_ff, cnt, L.n_ff);
    lin.run(row_slice(L.down, e * n_embd, n_embd), act_mid_, ys + r0 * n_embd);
    if (L.down_b != nullptr) add_bias(ys + r0 * n_embd, L.down_b + e * n_embd, cnt, n_embd, st);
  }
  use_rows_ = true;
}

void GpuMoe::shared_expert(const Layer& L, Activation& act, int64_t n, LinearRunner& lin) {
  cudaStream_t st = lin.stream();
  float* gate = gate_.as<float>();  // the experts are done with gate_ and up_
  float* up = up_.as<float>();
  lin.run(L.sh_gate, act, gate);  // [n, n_ff_sh]
  lin.run(L.sh_up, act, up);
  swiglu(gate, up, n, L.n_ff_sh, up, st);
  act_sh_.set(up, n, L.n_ff_sh);
  lin.run(L.sh_down, act_sh_, sh_.as<float>());  // [n, n_embd]
  if (L.sh_inp.data != nullptr) lin.run(L.sh_inp, act, sh_gate_.as<float>());  // [n, 1]
}

}  // namespace ferrite::cuda
