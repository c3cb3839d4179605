// phi3 LongRoPE: which factors apply (short up to the original context,
// long beyond), the attention factor's definition, the RoPE table with
// factors against a plain double-precision rotation, and end to end:
// synth-phi3 rewritten with hand-made factors evaluates with the short ones
// in a small context and with the long ones in a large one.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/ops/rope.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/longrope.h"
#include "model/model.h"
#include "runtime/context.h"
#include "support/test_data.h"

namespace {

using namespace ferrite;
namespace fs = std::filesystem;

TEST(LongRope, FactorsByContextSize) {
  const float short_f[2] = {1.0f, 1.0f}, long_f[2] = {2.0f, 4.0f};
  EXPECT_EQ(model::longrope_factors(short_f, long_f, 4096, 4096), short_f);  // not above the original
  EXPECT_EQ(model::longrope_factors(short_f, long_f, 4097, 4096), long_f);
  EXPECT_EQ(model::longrope_factors(short_f, nullptr, 8192, 4096), short_f);
  EXPECT_EQ(model::longrope_factors(nullptr, nullptr, 8192, 4096), nullptr);
}

TEST(LongRope, AttentionFactorDefinition) {
  // sqrt(1 + ln(s) / ln(orig)): 131072 / 4096 = 2^5 and 4096 = 2^12.
  EXPECT_NEAR(model::longrope_attn_factor(131072, 4096), std::sqrt(1.0 + 5.0 / 12.0), 1e-6);
  EXPECT_EQ(model::longrope_attn_factor(4096, 4096), 1.0f);  // no extension
  EXPECT_EQ(model::longrope_attn_factor(2048, 4096), 1.0f);
}

TEST(LongRope, TableWithFactorsMatchesPlainRotation) {
  cpu::RopeConfig cfg;
  cfg.n_rot = 16;
  cfg.neox = true;
  cfg.freq_base = 10000.0f;
  cfg.attn_factor = 1.25f;
  std::vector<float> factors(8);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + 0.75f * static_cast<float>(i);
  cfg.freq_factors = factors.data();
  const std::vector<int32_t> pos = {0, 1, 7, 100, 1000};
  std::vector<float> c(pos.size() * 8), s(pos.size() * 8);
  cpu::rope_table(cfg, pos.data(), static_cast<int64_t>(pos.size()), c.data(), s.data());
  for (size_t t = 0; t < pos.size(); ++t) {
    for (int i = 0; i < 8; ++i) {
      const double theta = pos[t] * std::pow(10000.0, -2.0 * i / 16.0) / factors[static_cast<size_t>(i)];
      // The float recurrence for base^(-2i/n) drifts by a few ulps per step;
      // angles up to 1000 radians turn that into ~1e-4.
      EXPECT_NEAR(c[t * 8 + i], 1.25 * std::cos(theta), 2e-4) << "pos " << pos[t] << " pair " << i;
      EXPECT_NEAR(s[t * 8 + i], 1.25 * std::sin(theta), 2e-4) << "pos " << pos[t] << " pair " << i;
    }
  }
}

// synth-phi3 with LongRoPE tensors and keys added.
class Phi3WithFactors {
 public:
  static constexpr int64_t kOrigCtx = 64;

  Phi3WithFactors(const std::string& src_path, const std::vector<float>& short_f, const std::vector<float>& long_f,
                  bool with_attn_factor, const std::string& name) {
    const gguf::File src = gguf::File::open(src_path);
    gguf::Writer w;
    w.copy_metadata(src);
    w.set("phi3.rope.scaling.original_context_length", gguf::Value::u32(kOrigCtx));
    if (with_attn_factor) w.set("phi3.rope.scaling.attn_factor", gguf::Value::f32(1.0f));
    for (const auto& t : src.tensors()) {
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
    }
    w.add_tensor("rope_factors_short.weight", TensorType::F32, {static_cast<int64_t>(short_f.size())});
    w.add_tensor("rope_factors_long.weight", TensorType::F32, {static_cast<int64_t>(long_f.size())});
    path_ = (fs::temp_directory_path() / ("ferrite-phi3-" + std::to_string(::getpid()) + "-" + name + ".gguf"))
                .string();
    w.open(path_);
    for (const auto& t : src.tensors()) w.write_tensor_data(t.data, t.n_bytes);
    w.write_tensor_data(short_f.data(), short_f.size() * sizeof(float));
    w.write_tensor_data(long_f.data(), long_f.size() * sizeof(float));
    w.close();
  }
  ~Phi3WithFactors() {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::vector<float> last_logits(const std::string& path, int64_t n_ctx, const std::vector<int32_t>& prompt) {
  runtime::Context ctx(model::Model::load(path), {.n_ctx = n_ctx, .n_threads = 2});
  const std::span<const float> l = ctx.eval(prompt);
  return {l.begin(), l.end()};
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0.0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(static_cast<double>(a[i]) - b[i]));
  return d;
}

TEST(LongRope, Phi3UsesShortFactorsUpToTheOriginalContextAndLongBeyond) {
  FERRITE_SHARED_FILE(src, "models/synth/synth-phi3-f32.gguf");
  const int64_t n_pairs = 32;  // synth-phi3: rope dimension 64 (shared/README.md: heads of 64)
  const std::vector<float> ones(n_pairs, 1.0f);
  std::vector<float> hand(n_pairs);
  for (int64_t i = 0; i < n_pairs; ++i) hand[i] = 1.0f + 0.5f * static_cast<float>(i);
  // A: short = 1 (no change), long = hand-made. B: the other way round.
  const Phi3WithFactors a(src.string(), ones, hand, true, "a"), b(src.string(), hand, ones, true, "b");
  const std::vector<int32_t> prompt = {1, 450, 1243, 3290, 1701, 100, 432, 2000, 975, 278, 3999, 512};  // ids < 4096
  const int64_t small = Phi3WithFactors::kOrigCtx / 2, large = Phi3WithFactors::kOrigCtx * 2;

  const std::vector<float> plain = last_logits(src.string(), small, prompt);
  const std::vector<float> a_small = last_logits(a.path(), small, prompt);
  const std::vector<float> a_large = last_logits(a.path(), large, prompt);
  const std::vector<float> b_small = last_logits(b.path(), small, prompt);
  const std::vector<float> b_large = last_logits(b.path(), large, prompt);
  constexpr double kSame = 1e-4;
  // Factors of 1 are no factors: A in a small context, B in a large one.
  EXPECT_LT(max_diff(a_small, plain), kSame);
  EXPECT_LT(max_diff(b_large, plain), kSame);
  // The hand-made factors apply to A beyond the original context and to B
  // within it, identically, and change the logits.
  EXPECT_LT(max_diff(a_large, b_small), kSame);
  EXPECT_GT(max_diff(a_large, plain), 1e-2);
}

TEST(LongRope, Phi3AttentionFactorFromContextsWhenAbsent) {
  FERRITE_SHARED_FILE(src, "models/synth/synth-phi3-f32.gguf");
  const std::vector<float> ones(32, 1.0f);
  const Phi3WithFactors with(src.string(), ones, ones, true, "with"), without(src.string(), ones, ones, false, "wo");
  EXPECT_EQ(model::Model::load(with.path())->hparams().rope.yarn_attn_factor, 1.0f);
  // synth-phi3: context_length 2048 = 32 * 64 -> sqrt(1 + ln 32 / ln 64) = sqrt(1 + 5/6).
  EXPECT_NEAR(model::Model::load(without.path())->hparams().rope.yarn_attn_factor, std::sqrt(1.0 + 5.0 / 6.0),
              1e-6);
}

}  // namespace
