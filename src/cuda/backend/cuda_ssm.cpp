// The Mamba-2 mixer on the GPU (CudaBackend::ssm), the CPU's steps
// (cpu/backend/cpu_ssm.cpp) with the twins of cpu/recurrent/ssm.h (kernels/ssm.h).
// The recurrent state stays in the runtime's host memory (KvView::rs): the
// rows of the batch's sequences are copied to the device before the layer's
// kernels and back after them, so a step with SSM layers synchronises with
// the host and is never captured into a graph.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/kernels/check.h"
#include "cuda/kernels/ssm.h"

namespace ferrite::cuda {

void CudaBackend::ssm(const backend::SsmSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  const backend::RecurrentView* rs = kv_ != nullptr ? kv_->rs : nullptr;
  const auto layer = static_cast<size_t>(spec.layer);
  if (rs == nullptr || rs->slot == nullptr || layer >= rs->layers.size() || rs->layers[layer].conv == nullptr) {
    throw InvalidArgument("GPU: SSM layer " + std::to_string(spec.layer) + " has no recurrent state in this step");
  }
  if (!kernels()) return;
  host_work();
  const backend::SsmWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, d_inner = spec.d_inner, ch = spec.conv_ch(), cols = spec.in_cols();
  const int64_t conv_f = (spec.d_conv - 1) * ch, ssm_f = d_inner * spec.d_state;

  // The batch's distinct slots, and each token's index among them.
  std::vector<int32_t> uniq, index(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) {
    const int32_t s = rs->slot[t];
    auto it = std::find(uniq.begin(), uniq.end(), s);
    if (it == uniq.end()) it = uniq.insert(uniq.end(), s);
    index[static_cast<size_t>(t)] = static_cast<int32_t>(it - uniq.begin());
  }
  const auto n_u = static_cast<int64_t>(uniq.size());
  ssm_states_.reserve(static_cast<size_t>(n_u * (conv_f + ssm_f)) * sizeof(float));
  ssm_slots_.reserve(static_cast<size_t>(n) * sizeof(int32_t));
  float* conv_d = ssm_states_.as<float>();
  float* ssm_d = conv_d + n_u * conv_f;
  const backend::RecurrentLayer& st = rs->layers[layer];
  auto copy = [&](bool to_device) {
    for (int64_t u = 0; u < n_u; ++u) {
      float* hc = st.conv + uniq[static_cast<size_t>(u)] * conv_f;
      float* hs = st.ssm + uniq[static_cast<size_t>(u)] * ssm_f;
      const auto kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
      FERRITE_CUDA_CHECK(cudaMemcpyAsync(to_device ? conv_d + u * conv_f : hc, to_device ? hc : conv_d + u * conv_f,
                                         static_cast<size_t>(conv_f) * sizeof(float), kind, stream_));
      FERRITE_CUDA_CHECK(cudaMemcpyAsync(to_device ? ssm_d + u * ssm_f : hs, to_device ? hs : ssm_d + u * ssm_f,
                                         static_cast<size_t>(ssm_f) * sizeof(float), kind, stream_));
    }
  };
  copy(true);
  FERRITE_CUDA_CHECK(cudaMemcpyAsync(ssm_slots_.as<int32_t>(), index.data(), static_cast<size_t>(n) * sizeof(int32_t),
                                     cudaMemcpyHostToDevice, stream_));

  float* zx = scratch(kFfn, n * cols);
  lin_->run(weights_.matrix(w.in), act(h), zx);
  float* xbc = scratch(kAttn, n * ch);
  ssm_conv(conv_d, ssm_slots_.as<int32_t>(), zx + d_inner, cols, weights_.vec(w.conv), weights_.vec(w.conv_b), n,
           spec.d_conv, ch, xbc, stream_);
  float* y = scratch(kFfnAct, n * d_inner);
  const SsmScanDims dims{.n_head = spec.n_head, .head_dim = spec.head_dim(), .d_state = spec.d_state,
                         .n_group = spec.n_group};
  ssm_scan(ssm_d, ssm_slots_.as<int32_t>(), xbc, ch, zx + d_inner + ch, cols, weights_.vec(w.dt_b),
           weights_.vec(w.a), weights_.vec(w.d), dims, n, y, stream_);
  ssm_gated_norm(y, zx, cols, weights_.vec(w.norm), n, d_inner, spec.n_group, spec.eps, stream_);
  copy(false);
  FERRITE_CUDA_CHECK(cudaStreamSynchronize(stream_));  // the host rows (and index) are read back before they change

  act_tmp_.set(y, n, d_inner);
  lin_->run(weights_.matrix(w.out), act_tmp_, out.data, accumulate);
  written(out);
}

}  // namespace ferrite::cuda
