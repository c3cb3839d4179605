// The Mamba-2 mixer on the CPU (CpuBackend::ssm; backend::SsmSpec in ops.h):
// the input projection for the whole batch, then token by token in batch
// order the convolution, the scan and the gated norm with the state of the
// token's sequence (KvView::rs), then the output projection.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "cpu/backend/cpu_backend.h"
#include "cpu/recurrent/ssm.h"

namespace ferrite::cpu {

void CpuBackend::ssm(const backend::SsmSpec& spec, backend::Act h, backend::Act out, bool accumulate) {
  const backend::RecurrentView* rs = kv_ != nullptr ? kv_->rs : nullptr;
  const auto layer = static_cast<size_t>(spec.layer);
  if (rs == nullptr || rs->slot == nullptr || layer >= rs->layers.size() || rs->layers[layer].conv == nullptr ||
      rs->layers[layer].ssm == nullptr) {
    throw InvalidArgument("SSM layer " + std::to_string(spec.layer) + " has no recurrent state in this step");
  }
  const backend::SsmWeights& w = *spec.w;
  const int64_t n = batch_->n_tokens, d_inner = spec.d_inner, ch = spec.conv_ch(), cols = spec.in_cols();
  const int64_t conv_floats = (spec.d_conv - 1) * ch, ssm_floats = d_inner * spec.d_state;
  const int64_t gsd = spec.n_group * spec.d_state;

  float* zxbcdt = grow(ws_.ffn_a, n * cols);
  product(w.in, backend::Weight{}, h.data, n, zxbcdt);
  float* y = grow(ws_.ffn_b, n * d_inner);
  float* xbc = grow(ws_.attn, ch);
  const SsmScanArgs args{.n_head = spec.n_head, .head_dim = spec.head_dim(), .d_state = spec.d_state,
                         .n_group = spec.n_group, .dt_bias = w.dt_b.f32(), .a = w.a.f32(), .d = w.d.f32()};
  const backend::RecurrentLayer& st = rs->layers[layer];
  for (int64_t t = 0; t < n; ++t) {
    const int64_t slot = rs->slot[t];
    const float* row = zxbcdt + t * cols;
    ssm_conv_token(st.conv + slot * conv_floats, row + d_inner, w.conv.f32(), w.conv_b.f32(), spec.d_conv, ch, xbc);
    float* yt = y + t * d_inner;
    ssm_scan_token(args, st.ssm + slot * ssm_floats, xbc, row + d_inner + ch, xbc + d_inner, xbc + d_inner + gsd, yt);
    ssm_gated_norm(yt, row, w.norm.f32(), d_inner, spec.n_group, spec.eps);
  }
  product(w.out, backend::Weight{}, y, n, target(out, accumulate));
  finish(out, accumulate);
}

}  // namespace ferrite::cpu
