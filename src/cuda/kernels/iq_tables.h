// The IQ and TQ weight types on the GPU: which types they are, and the IQ
// types' lookup tables (lattice grids, IQ4 non-linear values) in device
// memory, copied once per device from the CPU's tables (quant/iq_grids.h).
#pragma once

#include "gguf/tensor_type.h"

namespace ferrite::cuda {

// IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, TQ1_0, TQ2_0,
// and MXFP4 (a table type of the same shape as IQ4_NL).
bool iq_gpu_type(TensorType t);

// The device copy of type t's table on the current device (uploaded on the
// first call there): IQ1_S/IQ1_M u64 [2048], IQ2_XXS u64 [256], IQ2_XS u64
// [512], IQ2_S u64 [1024], IQ3_XXS u32 [256], IQ3_S u32 [512] (one byte per
// element, element 0 lowest), IQ4_NL/IQ4_XS int8 [16], MXFP4 int8 [16] (quant/mxfp4.h);
// null for other types.
const void* iq_device_table(TensorType t);

}  // namespace ferrite::cuda
