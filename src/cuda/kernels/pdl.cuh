// Programmatic dependent launch (sm_90 and later). A kernel launched with
// pdl = true may start while the kernel ahead of it in the stream is still
// running: before it reads anything an earlier kernel wrote (or writes
// anything an earlier kernel reads) it must call grid_dependency_wait(),
// which returns once the previous kernel has finished and its writes are
// visible (and so every kernel before it). Work that needs none of that (the
// loads of weights, which no kernel writes) may come first. Without pdl the
// wait returns at once. A kernel may call launch_dependents() to let the
// next pdl kernel start before it ends; that changes nothing about when the
// next one's wait returns (the next kernel's wait returns once this one has
// finished, and this one finishes only after its own wait returned, so
// every block of a pdl kernel must wait before it exits). The next kernel
// launches once every block of this one has called it (or exited):
// - the small kernels (norms, SwiGLU, quantizers, rope, store_kv, the
//   decode attention) call it first, before their wait, so that the product
//   after them launches while the product before them finishes: its blocks
//   take the SM slots that product's last blocks free and load their weights
//   meanwhile (H100 tg128 over calling it after the wait: 7B Q4_0 +1.9%,
//   Q8_0 +1.2%, Q4_K_M +0.9%; bench/cuda/NOTES.md, eleventh session);
// - the products call it after their sums: called first, the small kernel
//   after a product takes its slots early and the product's later blocks
//   wait for them (measured 1-3% slower).
// Launched this way (where pdl_enabled(), ops.h):
// the decode GEMVs (gemv_quant, gemv_f16), the fused norm and SwiGLU, the
// activation quantizers, to_f16, rope, store_kv and attention_decode; each
// waits before its first access to memory an earlier kernel touches. A pdl
// launch after a copy or a kernel launched without it waits as usual
// (the runtime overlaps only with a kernel that lets it).
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "cuda/kernels/check.h"

namespace ferrite::cuda {

__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, s>>>(args...), with programmatic stream
// serialization when pdl (the kernel must then call grid_dependency_wait).
template <typename... Params, typename... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t s, bool pdl,
                   Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  FERRITE_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

}  // namespace ferrite::cuda
