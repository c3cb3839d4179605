// Kernel parity at every instruction-set level the host supports (issue 21):
// each fast path against its plain reference on fresh random inputs. Every
// run draws a new seed (printed with any failure; FERRITE_TEST_SEED=N repeats
// a run), so the suite explores new inputs each time it runs.
//   - packed quantized kernels: bit for bit the layout's reference, every
//     tile width;
//   - matmul() for every weight type the project can quantize to, plain and
//     repacked as the runtime does at load: within the operands' rounding of
//     the double-precision reference;
//   - attention, norms, RoPE, SwiGLU, GELU, the activation quantizers:
//     against their references.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/fp16.h"
#include "cpu/dot/act_quant.h"
#include "cpu/ops/activations.h"
#include "cpu/attention/attention.h"
#include "cpu/features.h"
#include "cpu/ops/gelu_f16.h"
#include "cpu/matmul.h"
#include "cpu/ops/norm.h"
#include "cpu/packed/packed.h"
#include "cpu/packed/packed_float.h"
#include "cpu/packed/packed_matmul.h"
#include "cpu/dot/quant_dot.h"
#include "cpu/ops/rope.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/type_traits.h"
#include "random_data.h"

namespace ferrite::cpu {
namespace {

// A new seed per run, or FERRITE_TEST_SEED.
uint32_t run_seed() {
  static const uint32_t seed = [] {
    if (const char* env = std::getenv("FERRITE_TEST_SEED")) return static_cast<uint32_t>(std::strtoul(env, nullptr, 10));
    return std::random_device{}();
  }();
  return seed;
}

std::string seed_note() { return "seed " + std::to_string(run_seed()) + " (FERRITE_TEST_SEED reproduces)"; }

// The kernel levels this host runs, the reference included.
std::vector<Isa> levels() {
  std::vector<Isa> out{Isa::Scalar};
  const Isa top = detected_isa();
  if (top == Isa::Neon) out.push_back(Isa::Neon);
  if (top == Isa::Avx2 || top == Isa::Avx512) out.push_back(Isa::Avx2);
  if (top == Isa::Avx512) out.push_back(Isa::Avx512);
  return out;
}

// Sets a level for its lifetime.
class AtLevel {
 public:
  explicit AtLevel(Isa isa) : saved_(active_isa_cap()) { set_isa(isa); }
  ~AtLevel() { set_isa_cap(saved_); }
  AtLevel(const AtLevel&) = delete;
  AtLevel& operator=(const AtLevel&) = delete;

 private:
  IsaCap saved_;
};

std::vector<float> normal(size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

struct Weights {
  std::vector<uint8_t> plain;
  std::vector<uint8_t> packed;  // empty unless packable
  MatView view;                 // plain rows
};

Weights make_weights(TensorType type, int64_t n, int64_t k, std::mt19937& rng) {
  const std::vector<float> f = normal(static_cast<size_t>(n * k), rng, 0.02f);
  Weights w;
  const uint64_t rb = tensor_row_bytes(type, static_cast<uint64_t>(k));
  w.plain.resize(rb * static_cast<uint64_t>(n));
  if (type == TensorType::F32) {
    std::memcpy(w.plain.data(), f.data(), w.plain.size());
  } else if (type == TensorType::F16 || type == TensorType::BF16) {
    for (size_t i = 0; i < f.size(); ++i) {
      const uint16_t h = type == TensorType::F16 ? fp32_to_fp16(f[i]) : fp32_to_bf16(f[i]);
      std::memcpy(w.plain.data() + 2 * i, &h, 2);
    }
  } else {
    const quant::TypeTraits& tt = quant::type_traits(type);
    const std::vector<float> importance(static_cast<size_t>(k), 1.0f);
    quant::quantize_rows(type, f.data(), w.plain.data(), n, k, tt.needs_imatrix ? importance.data() : nullptr);
  }
  w.view = MatView{type, w.plain.data(), k, n, rb};
  if (packable(w.view)) {
    w.packed.resize(w.plain.size());
    pack_rows(w.view, w.packed.data());
  }
  return w;
}

// Weight types matmul() takes that the project can produce (Q8_1 and Q8_K
// are activation formats).
std::vector<TensorType> product_types() {
  std::vector<TensorType> out;
  for (const TensorTypeInfo* i = tensor_types_begin(); i != tensor_types_end(); ++i) {
    if (i->type == TensorType::Q8_1 || i->type == TensorType::Q8_K) continue;
    if (i->type == TensorType::F32 || i->type == TensorType::F16 || i->type == TensorType::BF16) {
      out.push_back(i->type);
      continue;
    }
    const quant::TypeTraits* tt = quant::find_type_traits(i->type);
    if (tt != nullptr && tt->from_float != nullptr && matmul_supports(i->type)) out.push_back(i->type);
  }
  return out;
}

// Three super-blocks, or 11 blocks of 32 (no multiple of 64 or 128).
int64_t row_length(TensorType t) { return tensor_type_info(t)->block_size == 256 ? 768 : 352; }

// Bound on |matmul - matmul_ref| relative to sum_i |w_i x_i| (the reference
// uses the same rounded operands and sums in double): f32 sums of at most a
// few thousand terms, plus the activations' rounding for the float types.
double relative_bound(TensorType t) {
  switch (t) {
    case TensorType::F16:
      return 2e-3;
    case TensorType::BF16:
      return 1e-2;
    default:
      return 2e-5;
  }
}

// sum_i |w_i x_i| of row r and token t, from the dequantized weights.
std::vector<double> abs_dots(const Weights& w, const std::vector<float>& x, int64_t m) {
  const MatView& v = w.view;
  std::vector<float> row(static_cast<size_t>(v.k));
  std::vector<double> out(static_cast<size_t>(m * v.n));
  for (int64_t r = 0; r < v.n; ++r) {
    if (v.type == TensorType::F32) {
      std::memcpy(row.data(), v.row(r), static_cast<size_t>(v.k) * 4);
    } else if (v.type == TensorType::F16 || v.type == TensorType::BF16) {
      for (int64_t i = 0; i < v.k; ++i) {
        uint16_t h;
        std::memcpy(&h, v.row(r) + 2 * i, 2);
        row[static_cast<size_t>(i)] = v.type == TensorType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      }
    } else {
      quant::type_traits(v.type).to_float_ref(v.row(r), row.data(), v.k);
    }
    for (int64_t t = 0; t < m; ++t) {
      double s = 0;
      for (int64_t i = 0; i < v.k; ++i) s += std::fabs(static_cast<double>(row[i]) * x[static_cast<size_t>(t * v.k + i)]);
      out[static_cast<size_t>(t * v.n + r)] = s;
    }
  }
  return out;
}

TEST(IsaParity, PackedKernelsEqualTheirReferenceBitForBit) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed());
  constexpr int64_t kN = 32, kTokens = kPackTokens + 3;
  for (TensorType type : product_types()) {
    if (packed_kernel_ref(type) == nullptr) continue;
    const int64_t k = row_length(type);
    const Weights w = make_weights(type, kN, k, rng);
    ASSERT_FALSE(w.packed.empty()) << tensor_type_name(type);
    // The activations in the type's format, as the Q4_0 / Q4_K products quantize them.
    const ActQuant aq = act_quant_for(type);
    const QuantDot* qd = quant_dot_ref(aq == ActQuant::Q8_K ? TensorType::Q4_K : TensorType::Q4_0);
    const size_t arb = qd->act_row_bytes(k);
    std::vector<uint8_t> q8(arb * kTokens);
    const std::vector<float> x = normal(static_cast<size_t>(kTokens * k), rng);
    for (int64_t t = 0; t < kTokens; ++t) qd->quantize(x.data() + t * k, q8.data() + t * arb, k);
    // Q8_0 activations: the block scales and sums the packed products read.
    const int64_t nb32 = k / 32;
    std::vector<float> d(static_cast<size_t>(kTokens * nb32));
    std::vector<int32_t> sum(d.size());
    if (qd->act == ActQuant::Q8_0) {
      for (int64_t t = 0; t < kTokens; ++t) {
        const auto* blocks = reinterpret_cast<const quant::BlockQ8_0*>(q8.data() + t * arb);
        for (int64_t b = 0; b < nb32; ++b) {
          int32_t s = 0;
          for (int8_t q : blocks[b].qs) s += q;
          d[static_cast<size_t>(t * nb32 + b)] = fp16_to_fp32(blocks[b].d);
          sum[static_cast<size_t>(t * nb32 + b)] = s;
        }
      }
    }
    // Q8_1: each block's f16(amax / 127 * sum), llama.cpp's s.
    std::vector<float> s8_1(d.size());
    for (int64_t t = 0; t < kTokens && aq == ActQuant::Q8_1; ++t) {
      for (int64_t b = 0; b < nb32; ++b) {
        float amax = 0;
        for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[static_cast<size_t>(t * k + b * 32 + i)]));
        const size_t at = static_cast<size_t>(t * nb32 + b);
        s8_1[at] = fp16_to_fp32(fp32_to_fp16(amax / 127.0f * static_cast<float>(sum[at])));
      }
    }
    PackedActs acts{q8.data(), arb, d.data(), sum.data(), qd->act == ActQuant::Q8_0 ? nb32 : k / 256};
    if (aq == ActQuant::Q8_1) acts.s = s8_1.data();
    for (Isa isa : levels()) {
      const PackedKernel fast = find_packed_kernel(type, isa);
      if (fast == nullptr) continue;
      for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
        const int64_t t0 = kTokens - nt;
        std::vector<float> y(static_cast<size_t>(nt * kN), -1.0f), want(y.size(), -2.0f);
        for (int64_t g = 0; g < kN / kPackRows; ++g) {
          const uint8_t* group = w.packed.data() + g * kPackRows * w.view.row_bytes;
          fast(group, acts, t0, nt, y.data() + g * kPackRows, kN);
          packed_kernel_ref(type)(group, acts, t0, nt, want.data() + g * kPackRows, kN);
        }
        ASSERT_EQ(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)), 0)
            << tensor_type_name(type) << " " << isa_name(isa) << " nt=" << nt;
      }
    }
    // The two-group kernel: both groups' rows as the reference gives them,
    // nothing written past its 32 rows (y rows 48 wide here).
    const PackedKernel pair = packed_pair_kernel_avx512(type);
    if (pair == nullptr || detected_isa() < Isa::Avx512) continue;
    for (int64_t nt = 1; nt <= kPackTokens; ++nt) {
      const int64_t t0 = kTokens - nt, stride = kN + kPackRows;
      std::vector<float> y(static_cast<size_t>(nt * stride), -1.0f), want(static_cast<size_t>(nt * kN), -2.0f);
      pair(w.packed.data(), acts, t0, nt, y.data(), stride);
      for (int64_t g = 0; g < kN / kPackRows; ++g) {
        const uint8_t* group = w.packed.data() + g * kPackRows * w.view.row_bytes;
        packed_kernel_ref(type)(group, acts, t0, nt, want.data() + g * kPackRows, kN);
      }
      for (int64_t t = 0; t < nt; ++t) {
        ASSERT_EQ(std::memcmp(y.data() + t * stride, want.data() + t * kN, kN * sizeof(float)), 0)
            << tensor_type_name(type) << " pair nt=" << nt << " t=" << t;
        for (int64_t r = kN; r < stride; ++r) {
          ASSERT_EQ(y[static_cast<size_t>(t * stride + r)], -1.0f) << "pair wrote past its 32 rows, nt=" << nt;
        }
      }
    }
  }
}

TEST(IsaParity, MatmulOfEveryTypeMatchesReference) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed() + 1);
  constexpr int64_t kN = 32;
  ThreadPool pool(2);
  for (TensorType type : product_types()) {
    const int64_t k = row_length(type);
    const Weights w = make_weights(type, kN, k, rng);
    for (int64_t m : {1, 4, 9, 19}) {
      const std::vector<float> x = normal(static_cast<size_t>(m * k), rng);
      std::vector<float> want(static_cast<size_t>(m * kN));
      matmul_ref(w.view, x.data(), m, want.data());
      const std::vector<double> scale = abs_dots(w, x, m);
      for (Isa isa : levels()) {
        const AtLevel at(isa);
        for (bool repack : {false, true}) {
          if (repack && w.packed.empty()) continue;
          MatView v = w.view;
          if (repack) v.packed = w.packed.data();
          std::vector<float> y(want.size(), NAN);
          MatmulScratch scratch;
          matmul(v, x.data(), m, y.data(), pool, scratch);
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_NEAR(y[i], want[i], relative_bound(type) * scale[i] + 1e-30)
                << tensor_type_name(type) << " " << isa_name(isa) << (repack ? " repacked" : " plain") << " m=" << m
                << " i=" << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

// Rows with the cases a quantizer must get right: an all-zero block, the
// largest magnitude negative and repeated, values that round to a tie.
std::vector<float> quantizer_input(int64_t k, std::mt19937& rng) {
  std::vector<float> x = normal(static_cast<size_t>(k), rng);
  for (int64_t i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.0f;
  x[40] = -9.0f;
  x[300] = 9.0f;  // same magnitude, later: the first one sets the Q8_K sign
  for (int64_t i = 64; i < 96; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 80) * 0.5f;  // halves
  return x;
}

TEST(IsaParity, ActivationQuantizersEqualTheReference) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed() + 2);
  constexpr int64_t kK = 1024;
  for (TensorType type : {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K}) {
    const QuantDot* ref = quant_dot_ref(type);
    const std::vector<float> x = quantizer_input(kK, rng);
    std::vector<uint8_t> want(ref->act_row_bytes(kK));
    ref->quantize(x.data(), want.data(), kK);
    for (Isa isa : levels()) {
      const QuantDot* qd = find_quant_dot(type, isa);
      std::vector<uint8_t> got(want.size(), 0xCD);
      qd->quantize(x.data(), got.data(), kK);
      EXPECT_EQ(got, want) << tensor_type_name(type) << " " << isa_name(isa);
    }
  }
  if (detected_isa() != Isa::Avx2 && detected_isa() != Isa::Avx512) return;
  // The Q8_0 quantizer's block scales and sums (the packed products' operands).
  const std::vector<float> x = quantizer_input(kK, rng);
  std::vector<uint8_t> q(kK / 32 * sizeof(quant::BlockQ8_0));
  std::vector<float> d(kK / 32);
  std::vector<int32_t> sum(kK / 32);
  quantize_q8_0_avx2(x.data(), q.data(), d.data(), sum.data(), kK);
  const auto* blocks = reinterpret_cast<const quant::BlockQ8_0*>(q.data());
  for (int64_t b = 0; b < kK / 32; ++b) {
    int32_t s = 0;
    for (int8_t v : blocks[b].qs) s += v;
    EXPECT_EQ(sum[static_cast<size_t>(b)], s) << "block " << b;
    EXPECT_EQ(d[static_cast<size_t>(b)], fp16_to_fp32(blocks[b].d)) << "block " << b;
  }
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

// Each level's packed F16/BF16 kernel against the layout's reference (the
// summation orders differ: within 1e-5 of sum |w x|); F16 gives the same
// bits at the AVX2 and AVX-512 levels.
TEST(IsaParity, PackedFloatKernelsMatchTheirReference) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed() + 3);
  // kK: 176 column pairs, more than one block of widened weights and a partial one.
  constexpr int64_t kN = 32, kK = 352, kTokens = kPackFloatTokens + 3;
  for (TensorType type : {TensorType::F16, TensorType::BF16}) {
    const Weights w = make_weights(type, kN, kK, rng);
    const std::vector<float> x = normal(static_cast<size_t>(kTokens * kK), rng);
    std::vector<uint16_t> a16(x.size());
    std::vector<float> a32(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      a16[i] = type == TensorType::BF16 ? fp32_to_bf16(x[i]) : fp32_to_fp16(x[i]);
      a32[i] = type == TensorType::BF16 ? bf16_to_fp32(a16[i]) : fp16_to_fp32(a16[i]);
    }
    PackedFloatActs acts{type == TensorType::BF16 ? static_cast<const void*>(a16.data()) : a32.data(), kK};
    acts.wide = a32.data();
    const auto run = [&](PackedFloatKernel kernel, int64_t nt) {
      std::vector<float> y(static_cast<size_t>(nt * kN));
      for (int64_t g = 0; g < kN / kPackRows; ++g) {
        kernel(w.packed.data() + g * kPackRows * w.view.row_bytes, acts, kTokens - nt, nt, y.data() + g * kPackRows, kN);
      }
      return y;
    };
    std::vector<std::vector<float>> by_level;
    for (Isa isa : levels()) {
      const AtLevel at(isa);
      const PackedFloatKernel fast = find_packed_float_kernel(type);
      if (fast == nullptr) continue;
      std::vector<int64_t> counts;
      for (int64_t nt = 1; nt <= kPackTokens; ++nt) counts.push_back(nt);
      const int64_t most = packed_float_call_tokens();
      if (most > kPackTokens) counts.insert(counts.end(), {kPackTokens + 5, most});
      for (int64_t nt : counts) {
        const std::vector<float> y = run(fast, nt), want = run(packed_float_kernel_ref(type), nt);
        for (size_t i = 0; i < y.size(); ++i) {
          const int64_t t = kTokens - nt + static_cast<int64_t>(i) / kN, r = static_cast<int64_t>(i) % kN;
          double scale = 0;
          for (int64_t e = 0; e < kK; ++e) {
            const uint8_t* row = w.view.row(r) + 2 * e;
            uint16_t h;
            std::memcpy(&h, row, 2);
            scale += std::fabs((type == TensorType::BF16 ? bf16_to_fp32(h) : fp16_to_fp32(h)) * a32[t * kK + e]);
          }
          ASSERT_NEAR(y[i], want[i], 1e-5 * scale) << tensor_type_name(type) << " " << isa_name(isa) << " nt=" << nt;
        }
        if (nt == kPackTokens) by_level.push_back(y);
      }
      // A decode step (one token) gives the bits of the same token in a batch
      // (not promised by the AVX-512 BF16 kernel: its number of chains
      // depends on the tokens of the call).
      if (type == TensorType::BF16 && isa >= Isa::Avx512) continue;
      const std::vector<float> one = run(fast, 1), batch = run(fast, most);
      EXPECT_EQ(std::memcmp(one.data(), batch.data() + (most - 1) * kN, one.size() * sizeof(float)), 0)
          << tensor_type_name(type) << " " << isa_name(isa) << ": one token differs from the batch";
    }
    // (Every level from AVX2 up, AMX included: it has no F16 kernel of its own.)
    for (size_t i = 1; type == TensorType::F16 && i < by_level.size(); ++i) {
      EXPECT_EQ(std::memcmp(by_level[0].data(), by_level[i].data(), by_level[0].size() * sizeof(float)), 0)
          << "F16: AVX2 and level " << i << " above it give different bits";
    }
  }
}

}  // namespace
}  // namespace ferrite::cpu

namespace ferrite::cpu {
namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The row operations of a layer at every level against the scalar level,
// bit for bit: RoPE (both pairings), SwiGLU, the tabulated GELU, softmax.
TEST(IsaParity, RowOpsEqualTheScalarLevel) {
  SCOPED_TRACE(seed_note());
  std::mt19937 rng(run_seed() + 4);
  constexpr int64_t kTokens = 3, kHeads = 4, kHeadDim = 80, kN = 1000;
  const std::vector<float> x = normal(static_cast<size_t>(kTokens * kHeads * kHeadDim), rng, 3.0f);
  const std::vector<float> gate = normal(kN, rng, 4.0f), up = normal(kN, rng);
  std::vector<int32_t> pos = {0, 7, 4000};
  const auto run_all = [&]() {
    std::vector<std::vector<float>> out;
    for (bool neox : {false, true}) {
      RopeConfig cfg;
      cfg.n_rot = 64;  // partial: the last 16 dimensions pass through
      cfg.neox = neox;
      std::vector<float> c(kTokens * 32), s(kTokens * 32), v = x;
      rope_table(cfg, pos.data(), kTokens, c.data(), s.data());
      rope_apply(cfg, c.data(), s.data(), v.data(), kTokens, kHeads, kHeadDim);
      out.push_back(v);
    }
    std::vector<float> y(kN);
    swiglu(gate.data(), up.data(), kN, y.data());
    out.push_back(y);
    geglu_f16(gate.data(), up.data(), kN, y.data());
    out.push_back(y);
    y = gate;
    softmax_inplace(y.data(), kN);
    out.push_back(y);
    return out;
  };
  std::vector<std::vector<float>> want;
  {
    const AtLevel at(Isa::Scalar);
    want = run_all();
  }
  const char* names[] = {"rope", "rope neox", "swiglu", "geglu_f16", "softmax"};
  for (Isa isa : levels()) {
    const AtLevel at(isa);
    const auto got = run_all();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << names[i] << " " << isa_name(isa);
  }
}

}  // namespace
}  // namespace ferrite::cpu
