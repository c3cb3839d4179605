// Error checks for CUDA runtime and cuBLAS calls: a failure throws
// ferrite::Error naming the call and CUDA's message (library code never
// exits on a failed call).
#pragma once

#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/error.h"

namespace ferrite::cuda {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

inline void check_cublas(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cuBLAS: ") + what + ": status " + std::to_string(e));
}

}  // namespace ferrite::cuda

#define FERRITE_CUDA_CHECK(call) ::ferrite::cuda::check_cuda((call), #call)
#define FERRITE_CUBLAS_CHECK(call) ::ferrite::cuda::check_cublas((call), #call)
// After a kernel launch: reports launch-configuration errors at once.
#define FERRITE_CUDA_LAUNCHED() ::ferrite::cuda::check_cuda(cudaGetLastError(), "kernel launch")
