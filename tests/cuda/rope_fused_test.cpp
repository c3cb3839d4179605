// The stacked Q|K|V product that rotates q, k and stores k, v itself
// (gemv_quant_rope, ops.h) against the two launches it replaces for one
// token (gemv_quant, then rope_store_kv), on fresh random weights,
// activations and angles: the same arithmetic, so the same bits in q|k|v
// and in both cache rows.
#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cuda/backend/linear.h"
#include "device_util.h"

namespace ferrite::cuda {
namespace {

using test::fresh_rng;
using test::random_floats;
using test::to_device;
using test::to_host;

struct Case {
  TensorType type;
  int64_t n_head, n_head_kv, head_dim, n_rot, k;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << tensor_type_name(c.type) << " heads " << c.n_head << "/" << c.n_head_kv << " x " << c.head_dim << ", n_rot "
      << c.n_rot << ", k " << c.k;
}

constexpr int64_t kCells = 5, kSlot = 3;  // cache rows, the one written

class GpuRopeFused : public ::testing::TestWithParam<Case> {};

TEST_P(GpuRopeFused, EqualsProductThenRopeStoreKv) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode fast(false);
  const Case c = GetParam();
  std::mt19937 rng = fresh_rng();
  const int64_t n_q = c.n_head * c.head_dim, n_kv = c.n_head_kv * c.head_dim, rows = n_q + 2 * n_kv;
  const int64_t half = c.n_rot / 2;
  const std::vector<uint8_t> bytes =
      test::quantize_rows(c.type, random_floats(static_cast<size_t>(rows * c.k), rng), rows, c.k);
  std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
  std::uniform_real_distribution<float> angle(-3.1f, 3.1f);
  for (int64_t i = 0; i < half; ++i) {
    const float a = angle(rng);
    cos_t[static_cast<size_t>(i)] = std::cos(a);
    sin_t[static_cast<size_t>(i)] = std::sin(a);
  }
  DeviceBuffer wb;
  const GpuMatrix g = upload_matrix(c.type, rows, c.k, bytes.data(), wb, "qkv");
  DeviceBuffer xd = to_device(random_floats(static_cast<size_t>(c.k), rng, -2.0f, 2.0f));
  DeviceBuffer cd = to_device(cos_t), sd = to_device(sin_t);
  DeviceBuffer slot = to_device(std::vector<int32_t>{static_cast<int32_t>(kSlot)});
  const size_t cache_elems = static_cast<size_t>(kCells * n_kv);
  const std::vector<uint16_t> zeros(cache_elems, 0);
  DeviceBuffer k_ref = to_device(zeros), v_ref = to_device(zeros), k_new = to_device(zeros), v_new = to_device(zeros);
  DeviceBuffer y_ref = test::poisoned(static_cast<size_t>(rows)), y_new = test::poisoned(static_cast<size_t>(rows));

  LinearRunner lin(nullptr);
  Activation act;
  act.set(xd.as<float>(), 1, c.k);
  // The two launches.
  lin.run(g, act, y_ref.as<float>());
  float* q = y_ref.as<float>();
  rope_store_kv(q, q + n_q + n_kv, cd.as<float>(), sd.as<float>(), c.n_head, c.n_head_kv, c.head_dim,
                static_cast<int>(c.n_rot), false, slot.as<int32_t>(), k_ref.as<uint16_t>(), v_ref.as<uint16_t>(),
                nullptr);
  // The fused product.
  RopeKvOut r;
  r.cos_t = cd.as<float>();
  r.sin_t = sd.as<float>();
  r.n_q = n_q;
  r.n_kv = n_kv;
  r.head_dim = c.head_dim;
  r.half = half;
  r.slot = slot.as<int32_t>();
  r.k_cache = k_new.as<uint16_t>();
  r.v_cache = v_new.as<uint16_t>();
  ASSERT_TRUE(lin.takes_rope(g, 1, r));
  lin.run(g, act, y_new.as<float>(), false, nullptr, &r);

  const auto a = to_host<float>(y_ref, static_cast<size_t>(rows));
  const auto b = to_host<float>(y_new, static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    ASSERT_FALSE(std::isnan(b[static_cast<size_t>(i)])) << "row " << i;
    // (q | k rotated, v as the product wrote it)
    ASSERT_EQ(0, std::memcmp(&a[static_cast<size_t>(i)], &b[static_cast<size_t>(i)], sizeof(float)))
        << "row " << i << ": " << a[static_cast<size_t>(i)] << " vs " << b[static_cast<size_t>(i)];
  }
  EXPECT_EQ(to_host<uint16_t>(k_ref, cache_elems), to_host<uint16_t>(k_new, cache_elems));
  EXPECT_EQ(to_host<uint16_t>(v_ref, cache_elems), to_host<uint16_t>(v_new, cache_elems));
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuRopeFused,
                         ::testing::Values(Case{TensorType::Q4_0, 8, 2, 128, 128, 1024},
                                           Case{TensorType::Q4_K, 4, 4, 64, 32, 512},   // partial rotation
                                           Case{TensorType::Q8_0, 6, 3, 64, 64, 256},
                                           Case{TensorType::Q6_K, 4, 1, 128, 128, 768},
                                           Case{TensorType::Q5_0, 2, 2, 64, 0, 256}));  // no rotation

TEST(GpuRopeFused, RefusesWhatItCannotDo) {
  FERRITE_REQUIRE_GPU();
  const test::ProductMode fast(false);
  std::mt19937 rng = fresh_rng();
  const int64_t k = 256, rows = 3 * 64;
  const std::vector<uint8_t> bytes =
      test::quantize_rows(TensorType::Q8_0, random_floats(static_cast<size_t>(rows * k), rng), rows, k);
  DeviceBuffer wb, cache(64 * 2), slot(4), trig(64 * 4);
  const GpuMatrix g = upload_matrix(TensorType::Q8_0, rows, k, bytes.data(), wb, "qkv");
  RopeKvOut r;
  r.cos_t = trig.as<float>();
  r.sin_t = trig.as<float>();
  r.n_q = 64;
  r.n_kv = 64;
  r.head_dim = 64;
  r.half = 32;
  r.slot = slot.as<int32_t>();
  r.k_cache = cache.as<uint16_t>();
  r.v_cache = cache.as<uint16_t>();
  LinearRunner lin(nullptr);
  EXPECT_TRUE(lin.takes_rope(g, 1, r));
  EXPECT_FALSE(lin.takes_rope(g, 2, r));  // one token only
  RopeKvOut odd = r;
  odd.head_dim = 12;  // not whole blocks of rows
  odd.n_q = odd.n_kv = 48;
  EXPECT_FALSE(lin.takes_rope(g, 1, odd));
  RopeKvOut wide = r;
  wide.half = 33;  // more rotated dimensions than the head has
  EXPECT_FALSE(lin.takes_rope(g, 1, wide));
  RopeKvOut rows_differ = r;
  rows_differ.n_kv = 32;
  EXPECT_FALSE(lin.takes_rope(g, 1, rows_differ));
  Activation a;
  DeviceBuffer xd = to_device(random_floats(k, rng));
  a.set(xd.as<float>(), 1, k);
  DeviceBuffer y(rows * sizeof(float));
  EXPECT_THROW(lin.run(g, a, y.as<float>(), true, nullptr, &r), InvalidArgument);  // accumulate
  EXPECT_THROW(lin.run(g, a, y.as<float>(), false, nullptr, &odd), InvalidArgument);
  {
    const test::ProductMode exact(true);
    EXPECT_FALSE(lin.takes_rope(g, 1, r));  // the exact mode keeps its own kernels
  }
}

}  // namespace
}  // namespace ferrite::cuda
