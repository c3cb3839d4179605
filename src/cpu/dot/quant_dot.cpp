#include "cpu/dot/quant_dot.h"

namespace ferrite::cpu {

const QuantDot* find_quant_dot(TensorType type, Isa isa) {
  if (isa == Isa::Avx512) {
    if (const QuantDot* q = quant_dot_avx512(type)) return q;
  }
  if (isa >= Isa::Avx2) {
    if (const QuantDot* q = quant_dot_avx2(type)) return q;
  }
#if defined(__aarch64__)
  if (isa == Isa::NeonI8mm) {
    if (const QuantDot* q = quant_dot_neon_i8mm(type)) return q;
  }
  if (is_neon(isa)) {
    if (const QuantDot* q = quant_dot_neon(type)) return q;
  }
#endif
  return quant_dot_ref(type);
}

}  // namespace ferrite::cpu
