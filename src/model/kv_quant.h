// The quantized KV cache rows (quant/kv_quant.h) under the model's names,
// for the runtime's cache.
#pragma once

#include "quant/kv_quant.h"

namespace ferrite::model {

using quant::kKvQuantBlock;
using quant::kv_float_row;
using quant::kv_quant_row_bytes;
using quant::kv_quant_supported;
using quant::kv_quantize_row;
using quant::kv_row_to_f16;
using quant::kv_row_to_f32;

}  // namespace ferrite::model
