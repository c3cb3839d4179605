#include "cuda/gpu_moe.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/check.h"
#include "cuda/moe_ops.h"
#include "cuda/ops.h"
#include "model/decoder.h"
#include "model/weights.h"

namespace ferrite::cuda {
namespace {

// Slots per token the combine kernel orders (moe.cu kMaxUsed).
constexpr int64_t kMaxExpertsUsed = 64;

std::string layer_name(int64_t il, const char* s) { return model::WeightBinder::layer_name(il, s); }

bool float_type(TensorType t) { return t == TensorType::F32 || t == TensorType::F16; }

// True when the expert products of w can read the expert id on the device.
bool indirect(const GpuMatrix& w) { return float_type(w.type) || gemv_quant_experts_supports(w); }

size_t f32_bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

}  // namespace

GpuMoe::GpuMoe(const model::Model& m, int64_t first_layer)
    : model_(m), hp_(m.hparams()), first_layer_(first_layer) {
  const auto* decoder = dynamic_cast<const model::Decoder*>(&m.arch());
  if (decoder == nullptr) {
    throw InvalidArgument("GPU offload: experts of '" + hp_.arch + "' models are not supported on the GPU");
  }
  const int64_t n_expert = hp_.n_expert, k_used = hp_.n_expert_used;
  if (n_expert < 1 || n_expert > kMoeMaxExperts || k_used < 1 || k_used > n_expert || k_used > kMaxExpertsUsed) {
    throw InvalidArgument("GPU offload: " + std::to_string(k_used) + " of " + std::to_string(n_expert) +
                          " experts per token is not supported on the GPU (at most " +
                          std::to_string(kMaxExpertsUsed) + " of " + std::to_string(kMoeMaxExperts) + ")");
  }
  const gguf::File& file = m.file();
  layers_.resize(static_cast<size_t>(std::max<int64_t>(0, hp_.n_layer - first_layer)));
  for (int64_t il = first_layer; il < hp_.n_layer; ++il) {
    if (file.find_tensor(layer_name(il, "ffn_gate_inp.weight")) == nullptr) continue;  // a dense layer
    Layer& L = layers_[static_cast<size_t>(il - first_layer)];
    L.present = true;
    L.renorm = decoder->layer(il).moe.norm_weights;
    L.router = upload(layer_name(il, "ffn_gate_inp.weight"), true);
    L.gate = upload(layer_name(il, "ffn_gate_exps.weight"), true, n_expert);
    L.up = upload(layer_name(il, "ffn_up_exps.weight"), true, n_expert);
    L.down = upload(layer_name(il, "ffn_down_exps.weight"), true, n_expert);
    L.n_ff = L.up.n / n_expert;
    if (L.router.n != n_expert || L.router.k != hp_.n_embd || L.gate.k != hp_.n_embd || L.gate.n != L.up.n ||
        L.down.k != L.n_ff || L.down.n != n_expert * hp_.n_embd) {
      throw ModelError(file.path() + ": layer " + std::to_string(il) + ": expert tensor shapes do not agree");
    }
    if (file.find_tensor(layer_name(il, "ffn_up_shexp.weight")) != nullptr) {
      L.sh_gate = upload(layer_name(il, "ffn_gate_shexp.weight"), true);
      L.sh_up = upload(layer_name(il, "ffn_up_shexp.weight"), true);
      L.sh_down = upload(layer_name(il, "ffn_down_shexp.weight"), true);
      L.sh_inp = upload(layer_name(il, "ffn_gate_inp_shexp.weight"), false);
      L.n_ff_sh = L.sh_up.n;
      if (L.sh_gate.n != L.n_ff_sh || L.sh_down.k != L.n_ff_sh || L.sh_down.n != hp_.n_embd ||
          (L.sh_inp.data != nullptr && (L.sh_inp.n != 1 || L.sh_inp.k != hp_.n_embd))) {
        throw ModelError(file.path() + ": layer " + std::to_string(il) + ": shared expert shapes do not agree");
      }
    }
    L.on_device = indirect(L.gate) && indirect(L.up) && indirect(L.down);
  }
}

GpuMatrix GpuMoe::upload(const std::string& name, bool required, int64_t items) {
  const gguf::TensorInfo* t = model_.file().find_tensor(name);
  if (t == nullptr) {
    if (required) throw ModelError(model_.file().path() + ": required tensor " + name + " is missing");
    return {};
  }
  if (t->data == nullptr) throw ModelError(model_.file().path() + ": tensor " + name + " has no data");
  // [k, n] or, for experts, [k, n, items]: rows n (* items) of k.
  const uint32_t expected_dims = items > 0 ? 3 : 2;
  if (t->n_dims > expected_dims || (items > 0 && (t->n_dims != 3 || t->ne[2] != items))) {
    throw ModelError(model_.file().path() + ": tensor " + name + " has an unexpected shape");
  }
  int64_t rows = 1;
  for (uint32_t d = 1; d < t->n_dims; ++d) rows *= t->ne[d];
  buffers_.emplace_back();
  const GpuMatrix g = upload_matrix(t->type, rows, t->ne[0], t->data, buffers_.back(), name);
  weight_bytes_ += buffers_.back().size();
  return g;
}

const GpuMoe::Layer& GpuMoe::layer(int64_t il) const {
  if (!has(il)) throw InvalidArgument("GPU MoE: layer " + std::to_string(il) + " has no experts");
  return layers_[static_cast<size_t>(il - first_layer_)];
}

bool GpuMoe::has(int64_t il) const {
  return il >= first_layer_ && il - first_layer_ < static_cast<int64_t>(layers_.size()) &&
         layers_[static_cast<size_t>(il - first_layer_)].present;
}

TensorType GpuMoe::input_type(int64_t il) const { return layer(il).gate.type; }

bool GpuMoe::device_only(int64_t n) const {
  if (n != 1 || exact_products()) return false;
  return std::all_of(layers_.begin(), layers_.end(), [](const Layer& L) { return !L.present || L.on_device; });
}

void GpuMoe::reserve(int64_t n, const Layer& L) {
  const int64_t slots = n * hp_.n_expert_used, n_embd = hp_.n_embd;
  logits_.reserve(f32_bytes(n * hp_.n_expert));
  ids_.reserve(static_cast<size_t>(slots) * sizeof(int32_t));
  weights_.reserve(f32_bytes(slots));
  rows_.reserve(2 * static_cast<size_t>(slots) * sizeof(int32_t));
  in_.reserve(f32_bytes(slots * n_embd));
  gate_.reserve(f32_bytes(std::max(slots * L.n_ff, n * L.n_ff_sh)));
  up_.reserve(f32_bytes(std::max(slots * L.n_ff, n * L.n_ff_sh)));
  ys_.reserve(f32_bytes(slots * n_embd));
  sh_.reserve(f32_bytes(n * n_embd));
  sh_gate_.reserve(f32_bytes(n));
}

void GpuMoe::run(int64_t il, Activation& act, float* x, LinearRunner& lin) {
  const Layer& L = layer(il);
  const int64_t n = act.m();
  if (n <= 0) return;
  if (act.k() != hp_.n_embd) throw InvalidArgument("GPU MoE: input width differs from n_embd");
  cudaStream_t st = lin.stream();
  reserve(n, L);
  // 1. Router: logits [n, n_expert] -> ids, weights [n, k_used].
  lin.run(L.router, act, logits_.as<float>());
  moe_route(logits_.as<float>(), n, hp_.n_expert, hp_.n_expert_used, L.renorm, ids_.as<int32_t>(),
            weights_.as<float>(), st);
  // 2. The experts' outputs ys, then the shared expert.
  if (L.on_device && device_only(n)) {
    experts_on_device(L, act, n, lin);
  } else {
    experts_grouped(L, act, n, lin);
  }
  if (L.sh_up.data != nullptr) shared_expert(L, act, n, lin);
  // 3. x += the weighted experts (+ the gated shared expert).
  MoeCombine c;
  c.ys = ys_.as<float>();
  c.rows = use_rows_ ? rows_.as<int32_t>() + n * hp_.n_expert_used : nullptr;
  c.ids = ids_.as<int32_t>();
  c.weights = weights_.as<float>();
  c.sh = L.sh_up.data != nullptr ? sh_.as<float>() : nullptr;
  c.sh_gate = L.sh_inp.data != nullptr ? sh_gate_.as<float>() : nullptr;
  c.n = n;
  c.k_used = hp_.n_expert_used;
  c.n_embd = hp_.n_embd;
  moe_combine(c, x, st);
}

void GpuMoe::experts_on_device(const Layer& L, Activation& act, int64_t n, LinearRunner& lin) {
  cudaStream_t st = lin.stream();
  const int64_t slots = n * hp_.n_expert_used;  // n == 1: slot j is the token's j-th expert
  const int32_t* ids = ids_.as<int32_t>();
  // y [slots, rows] = expert ids[j] of w times activation row j * step of a.
  auto product = [&](const GpuMatrix& w, Activation& a, int64_t step, int64_t rows, float* y) {
    if (float_type(w.type)) {
      moe_gemv_float(w, ids, slots, rows, a.x(), step, y, st);
    } else {
      gemv_quant_experts(w, ids, slots, rows, a.quantized(act_format_for(w.type), st), step, y, pdl_enabled(), st);
    }
  };
  float* gate = gate_.as<float>();
  float* up = up_.as<float>();
  product(L.gate, act, 0, L.n_ff, gate);  // [slots, n_ff]
  product(L.up, act, 0, L.n_ff, up);
  swiglu(gate, up, slots, L.n_ff, up, st);
  act_mid_.set(up, slots, L.n_ff);
  product(L.down, act_mid_, 1, hp_.n_embd, ys_.as<float>());  // [slots, n_embd]
  use_rows_ = false;
}

void GpuMoe::experts_grouped(const Layer& L, Activation& act, int64_t n, LinearRunner& lin) {
  cudaStream_t st = lin.stream();
  const int64_t k_used = hp_.n_expert_used, slots = n * k_used, n_expert = hp_.n_expert, n_embd = hp_.n_embd;
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
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = start[e], cnt = start[e + 1] - start[e];
    if (cnt == 0) continue;
    act_in_.set(in + r0 * n_embd, cnt, n_embd);
    lin.run(row_slice(L.gate, e * L.n_ff, L.n_ff), act_in_, gate + r0 * L.n_ff);
    lin.run(row_slice(L.up, e * L.n_ff, L.n_ff), act_in_, up + r0 * L.n_ff);
  }
  swiglu(gate, up, slots, L.n_ff, up, st);
  for (int64_t e = 0; e < n_expert; ++e) {
    const int64_t r0 = start[e], cnt = start[e + 1] - start[e];
    if (cnt == 0) continue;
    act_mid_.set(up + r0 * L.n_ff, cnt, L.n_ff);
    lin.run(row_slice(L.down, e * n_embd, n_embd), act_mid_, ys + r0 * n_embd);
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
