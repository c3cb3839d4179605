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
constexpr int64_t kQ8_0Block = 32, kQ8KBlock = 256;  // elements per 8-bit activation block

std::string layer_name(int64_t il, const char* s) { return model::WeightBinder::layer_name(il, s); }

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
    const std::string gn = layer_name(il, "ffn_gate_exps.weight"), un = layer_name(il, "ffn_up_exps.weight");
    L.gate_up = upload_gate_up(gn, un);
    if (L.gate_up.data == nullptr) {
      L.gate = upload(gn, true, n_expert);
      L.up = upload(un, true, n_expert);
    }
    L.down = upload(layer_name(il, "ffn_down_exps.weight"), true, n_expert);
    L.n_ff = L.gate_up.data != nullptr ? L.gate_up.n / (2 * n_expert) : L.up.n / n_expert;
    const int64_t gate_k = L.gate_up.data != nullptr ? L.gate_up.k : L.gate.k;
    if (L.router.n != n_expert || L.router.k != hp_.n_embd || gate_k != hp_.n_embd ||
        (L.gate_up.data == nullptr && (L.gate.n != L.up.n || L.up.k != hp_.n_embd)) || L.down.k != L.n_ff ||
        L.down.n != n_expert * hp_.n_embd) {
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
    L.on_device = (L.gate_up.data != nullptr ? indirect(L.gate_up) : indirect(L.gate) && indirect(L.up)) &&
                  indirect(L.down);
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

GpuMatrix GpuMoe::upload_gate_up(const std::string& gate, const std::string& up) {
  const gguf::TensorInfo* g = model_.file().find_tensor(gate);
  const gguf::TensorInfo* u = model_.file().find_tensor(up);
  if (g == nullptr || u == nullptr || g->data == nullptr || u->data == nullptr || g->n_dims != 3 ||
      u->n_dims != 3 || g->type != u->type || g->ne != u->ne || g->n_bytes != u->n_bytes ||
      g->ne[2] != hp_.n_expert) {
    return {};  // uploaded one by one (and checked) instead
  }
  // Rows are stored one after another in every type: expert e's bytes are
  // the e-th of n_expert equal parts.
  const uint64_t per_expert = g->n_bytes / static_cast<uint64_t>(hp_.n_expert);
  std::vector<uint8_t> host(2 * g->n_bytes);
  for (int64_t e = 0; e < hp_.n_expert; ++e) {
    uint8_t* dst = host.data() + 2 * per_expert * static_cast<uint64_t>(e);
    std::copy_n(g->data + per_expert * e, per_expert, dst);
    std::copy_n(u->data + per_expert * e, per_expert, dst + per_expert);
  }
  buffers_.emplace_back();
  const GpuMatrix m = upload_matrix(g->type, 2 * g->ne[1] * g->ne[2], g->ne[0], host.data(), buffers_.back(),
                                    gate + " (stacked with up)");
  weight_bytes_ += buffers_.back().size();
  return m;
}

GpuMatrix GpuMoe::expert_gate(const Layer& L, int64_t e) {
  return L.gate_up.data != nullptr ? row_slice(L.gate_up, 2 * e * L.n_ff, L.n_ff) : row_slice(L.gate, e * L.n_ff, L.n_ff);
}

GpuMatrix GpuMoe::expert_up(const Layer& L, int64_t e) {
  return L.gate_up.data != nullptr ? row_slice(L.gate_up, (2 * e + 1) * L.n_ff, L.n_ff)
                                   : row_slice(L.up, e * L.n_ff, L.n_ff);
}

const GpuMoe::Layer& GpuMoe::layer(int64_t il) const {
  if (!has(il)) throw InvalidArgument("GPU MoE: layer " + std::to_string(il) + " has no experts");
  return layers_[static_cast<size_t>(il - first_layer_)];
}

bool GpuMoe::has(int64_t il) const {
  return il >= first_layer_ && il - first_layer_ < static_cast<int64_t>(layers_.size()) &&
         layers_[static_cast<size_t>(il - first_layer_)].present;
}

TensorType GpuMoe::input_type(int64_t il) const {
  const Layer& L = layer(il);
  return L.gate_up.data != nullptr ? L.gate_up.type : L.gate.type;
}

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
  gate_.reserve(f32_bytes(std::max(2 * slots * L.n_ff, n * L.n_ff_sh)));  // decode: gate | up
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
  product(L.down, act_mid_, 1, hp_.n_embd, ys_.as<float>(), 0);  // [slots, n_embd]
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
    lin.run(expert_gate(L, e), act_in_, gate + r0 * L.n_ff);
    lin.run(expert_up(L, e), act_in_, up + r0 * L.n_ff);
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
