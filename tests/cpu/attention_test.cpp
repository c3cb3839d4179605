// The threaded attention against the plain reference and a hand-checkable case.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/attention.h"
#include "cpu/features.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Attention, MatchesReferenceWithGqaAndMask) {
  const int64_t n_tokens = 5, n_head = 4, n_head_kv = 2, head_dim = 24, n_kv = 9;
  const auto q = test::random_floats(n_tokens * n_head * head_dim, 1);
  const auto k = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 2));
  const auto v = test::to_f16(test::random_floats(n_kv * n_head_kv * head_dim, 3));  // [n_head_kv*head_dim, n_kv]
  std::vector<float> mask(n_tokens * n_kv);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t j = 0; j < n_kv; ++j) mask[t * n_kv + j] = j <= t + 4 ? 0.0f : -kInf;  // causal
  }
  for (float softcap : {0.0f, 5.0f}) {
    AttentionArgs a;
    a.q = q.data();
    a.k = k.data();
    a.vt = v.data();
    a.vt_stride = n_kv;
    a.kv_stride = n_head_kv * head_dim;
    a.n_kv = n_kv;
    a.mask = mask.data();
    a.n_tokens = n_tokens;
    a.n_head = n_head;
    a.n_head_kv = n_head_kv;
    a.head_dim = head_dim;
    a.scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    a.softcap = softcap;
    std::vector<float> out(n_tokens * n_head * head_dim), out_ref(out.size());
    a.out = out_ref.data();
    attention_ref(a);
    const Isa saved = active_isa();
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      set_isa(isa);
      ThreadPool pool(2);
      AttentionScratch scratch;
      a.out = out.data();
      attention(a, pool, scratch);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], out_ref[i], 2e-5) << isa_name(isa) << " " << i;
    }
    set_isa(saved);
  }
}

// One visible cell: the output is that cell's V row exactly.
TEST(Attention, SingleVisibleCellCopiesV) {
  const int64_t head_dim = 4;
  const std::vector<float> q = {1, 2, 3, 4};
  const auto k = test::to_f16({1, 0, 0, 0, 0, 1, 0, 0});
  // V transposed: row d holds cells 0 and 1.
  const auto v = test::to_f16({0.5f, 9, -1, 9, 2, 9, 4, 9});
  const std::vector<float> mask = {0.0f, -kInf};
  std::vector<float> out(head_dim);
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.vt = v.data();
  a.vt_stride = 2;
  a.kv_stride = head_dim;
  a.n_kv = 2;
  a.mask = mask.data();
  a.n_tokens = 1;
  a.n_head = 1;
  a.n_head_kv = 1;
  a.head_dim = head_dim;
  a.out = out.data();
  ThreadPool pool(1);
  AttentionScratch scratch;
  attention(a, pool, scratch);
  EXPECT_EQ(out, (std::vector<float>{0.5f, -1, 2, 4}));
}

}  // namespace
}  // namespace ferrite::cpu
