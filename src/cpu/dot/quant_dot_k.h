// AVX-512 (VNNI) products of K-quant weights with Q8_K activations
// (quant_dot_k_avx512.cpp), with register-blocked tiles. quant_dot_avx512()
// hands the K types to this table.
#pragma once

#include "cpu/dot/quant_dot.h"

namespace ferrite::cpu {

// The AVX-512 QuantDot of a K type, or nullptr for other types.
const QuantDot* quant_dot_k_avx512(TensorType type);

// The AVX2 QuantDot of a K type (quant_dot_k_avx2.cpp: bit-identical to the
// reference dots and quantizer, with tiles), or nullptr for other types.
// quant_dot_avx2() hands the K types to this table.
const QuantDot* quant_dot_k_avx2(TensorType type);

// The NEON QuantDot of a K type or IQ4_XS (quant_dot_k_neon.cpp, aarch64
// builds only: bit-identical to the reference dots, NEON Q8_K quantizer, SDOT
// tiles), or nullptr for other types. quant_dot_neon() hands these types to
// this table.
const QuantDot* quant_dot_k_neon(TensorType type);

}  // namespace ferrite::cpu
