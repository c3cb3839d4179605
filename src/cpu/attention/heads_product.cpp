#include "cpu/attention/heads_product.h"

#include "core/error.h"
#include "core/fp16.h"
#include "cpu/thread_pool.h"

namespace ferrite::cpu {

void heads_product(const HeadsProduct& p, ThreadPool& pool) {
  if (p.w_type != TensorType::F32 && p.w_type != TensorType::F16) {
    throw InvalidArgument("heads_product: " + tensor_type_name(p.w_type) + " weights (F32 or F16 only)");
  }
  const bool f16 = p.w_type == TensorType::F16;
  pool.run(
      [&](int ith, int nth) {
        const Range r = split_range(p.n * p.n_head, ith, nth);
        for (int64_t wi = r.begin; wi < r.end; ++wi) {
          const int64_t t = wi / p.n_head, h = wi % p.n_head;
          const float* x = p.in + t * p.in_row + h * p.in_head;
          float* y = p.out + t * p.out_row + h * p.out_head;
          for (int64_t j = 0; j < p.n_out; ++j) {
            const int64_t row = (h * p.n_out + j) * p.n_in;
            float acc = 0.0f;
            if (f16) {
              const uint16_t* w = static_cast<const uint16_t*>(p.w) + row;
              for (int64_t i = 0; i < p.n_in; ++i) acc += x[i] * fp16_to_fp32(w[i]);
            } else {
              const float* w = static_cast<const float*>(p.w) + row;
              for (int64_t i = 0; i < p.n_in; ++i) acc += x[i] * w[i];
            }
            y[j] = acc;
          }
        }
      },
      p.n * p.n_head * p.n_out * p.n_in);
}

}  // namespace ferrite::cpu
