#include "cpu/vec_ops.h"

namespace ferrite::cpu {

const VecOps& vec_ops_for(Isa isa) {
  switch (isa) {
    case Isa::Avx512:
      return vec_ops_avx512();
    case Isa::Avx2:
      return vec_ops_avx2();
    case Isa::Neon:
    case Isa::NeonI8mm:
#if defined(__aarch64__)
      return vec_ops_neon();
#else
      break;  // not built for this target
#endif
    case Isa::Scalar:
      break;
  }
  return vec_ops_ref();
}

const VecOps& vec_ops() { return vec_ops_for(active_isa()); }

}  // namespace ferrite::cpu
