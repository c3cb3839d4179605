// Programmatic dependent launch (sm_90 and later). A kernel launched with
// pdl = true may start while the kernel ahead of it in the stream is still
// running: before it reads anything an earlier kernel wrote (or writes
// anything an earlier kernel reads) it must call grid_dependency_wait(),
// which returns once the previous kernel has finished and its writes are
// visible (and so every kernel before it). Work that needs none of that (the
// loads of weights, which no kernel writes) may come first. Without pdl the
// wait returns at once. A kernel may call launch_dependents() to let the
// next pdl kernel start before it ends; that changes nothing about when the
// next one's wait returns. Launched this way (where pdl_enabled(), ops.h):
// the decode GEMVs (gemv_quant, gemv_f16), the fused norm and SwiGLU, the
// activation quantizers, to_f16, rope, store_kv and attention_decode; each
// waits before its first access to memory an earlier kernel touches. A pdl
// launch after a copy or a kernel launched without it waits as usual
// (the runtime overlaps only with a kernel that lets it).
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "cuda/check.h"

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
