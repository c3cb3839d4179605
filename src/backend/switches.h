// The run-time switches of the backends, read from the environment once, in
// one place (switches.cpp), and passed down from there: the model load takes
// the repacking ones (model/packed_weights.h), the CPU kernels their AMX and
// Q6_K choices (cpu/packed/packed_matmul.h), a context's CUDA backend the CUDA ones
// (runtime/context.h ContextParams::switches). `ferrite info --json` shows
// them. Every switch is on by default except FERRITE_CUDA_EXACT.
//
//   FERRITE_REPACK=0          no repacking of weights at load
//   FERRITE_REPACK_FLOAT=0    F16/BF16 matrices stay plain (llama.cpp's summation order)
//   FERRITE_REPACK_Q6K=0      Q6_K matrices stay plain
//   FERRITE_AMX=0             no AMX tile kernels
//   FERRITE_CUDA_EXACT=1      the CPU's arithmetic for every GPU product and attention
//   FERRITE_CUDA_GRAPHS=0     no CUDA graphs for decode steps
//   FERRITE_CUDA_FUSE=0|noattn|norope   no fused conversions / not the attention's / not RoPE's
//   FERRITE_CUDA_PDL=0|gemv   no programmatic dependent launch / only for the GEMVs
//   FERRITE_CUDA_ATTN_WARPS=4|8|16      the decode attention's warps per block (0: chosen per shape)
//   FERRITE_CUDA_MMA_ROWS=LO:HI         batches of LO..HI rows take the int8 tensor-core product
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ferrite::backend {

struct Switches {
  bool repack = true;
  bool repack_float = true;
  bool repack_q6k = true;
  bool amx = true;
  bool cuda_exact = false;
  bool cuda_graphs = true;
  bool cuda_fuse = true;       // norms and SwiGLU with their conversions
  bool cuda_fuse_attn = true;  // the decode attention writing the output product's Q8_0 input
  bool cuda_fuse_rope = true;  // the Q|K|V product rotating and storing K/V
  int cuda_pdl = 2;            // 0: none, 1: the GEMVs, 2: every decode kernel
  int cuda_attn_warps = 0;     // 0: chosen per shape
  int64_t cuda_mma_min_rows = 5, cuda_mma_max_rows = 128;
};

// The switches from the environment, read at the first call (later changes
// of the environment are not seen). Throws InvalidArgument for a malformed
// value (FERRITE_CUDA_MMA_ROWS, FERRITE_CUDA_ATTN_WARPS).
const Switches& env_switches();

// Parses the switches from a lookup of variable names (env_switches uses
// getenv; tests pass their own).
Switches parse_switches(const char* (*lookup)(const char* name));

// (environment variable, value) of every switch, in the order above.
std::vector<std::pair<std::string, std::string>> describe(const Switches& s);

}  // namespace ferrite::backend
