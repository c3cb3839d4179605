// The IQ lattice quantizers: the grid projection against a brute-force
// search over every grid entry, the importance-matrix requirement of the
// IQ1/IQ2 types (llama.cpp refuses them without one), and a quick quality
// check of every IQ type on one tensor of the synth model against the RMSE
// llama.cpp's quantizer reached (the full per-tensor bar is in
// QuantizeRmseSlow).
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/file.h"
#include "quant/dequantize.h"
#include "quant/imatrix.h"
#include "quant/iq_grid_search.h"
#include "quant/type_traits.h"
#include "support/test_data.h"

namespace ferrite::quant {
namespace {

const TensorType kIqTypes[] = {TensorType::IQ3_S,  TensorType::IQ3_XXS, TensorType::IQ2_S, TensorType::IQ2_XS,
                               TensorType::IQ2_XXS, TensorType::IQ1_M,   TensorType::IQ1_S};

// Brute force: the least weighted error over every entry of the grid.
float exhaustive_error(const IqGrid& g, const float* y, const float* w, float offset) {
  float best = INFINITY;
  for (int e = 0; e < g.n_entries(); ++e) {
    float s = 0.0f;
    for (int j = 0; j < g.group(); ++j) {
      const float d = y[j] - offset - g.values(e)[j];
      s += w[j] * d * d;
    }
    best = std::min(best, s);
  }
  return best;
}

TEST(IqGridSearch, ProjectionNearTheBruteForceOptimum) {
  std::mt19937 rng(7);
  for (const TensorType type : kIqTypes) {
    SCOPED_TRACE(tensor_type_name(type));
    const IqGrid& g = IqGrid::of(type);
    std::uniform_real_distribution<float> value(g.level(0) - 1.0f, g.top_level() + 1.0f);
    std::uniform_real_distribution<float> weight(0.1f, 1.0f);
    int exact = 0;
    const int trials = 400;
    double ratio_sum = 0.0;
    for (int t = 0; t < trials; ++t) {
      float y[IqGrid::kMaxGroup], w[IqGrid::kMaxGroup];
      for (int j = 0; j < g.group(); ++j) {
        y[j] = value(rng);
        w[j] = weight(rng);
      }
      float err = -1.0f;
      const int e = g.project(y, w, 0.0f, &err);
      ASSERT_GE(e, 0);
      ASSERT_LT(e, g.n_entries());
      // The reported error is the error of the returned entry.
      float check = 0.0f;
      for (int j = 0; j < g.group(); ++j) check += w[j] * (y[j] - g.values(e)[j]) * (y[j] - g.values(e)[j]);
      EXPECT_NEAR(err, check, 1e-3f * (1.0f + check));
      const float best = exhaustive_error(g, y, w, 0.0f);
      EXPECT_GE(err, best - 1e-3f * (1.0f + best));
      if (err <= best * (1.0f + 1e-5f) + 1e-6f) ++exact;
      ratio_sum += best > 0 ? err / best : 1.0;
    }
    // A search among neighbours: mostly the optimum, never far from it.
    EXPECT_GE(exact, trials * 6 / 10);
    EXPECT_LT(ratio_sum / trials, 1.1);
  }
}

TEST(IqGridSearch, OnGridTuplesAreFoundExactly) {
  for (const TensorType type : kIqTypes) {
    const IqGrid& g = IqGrid::of(type);
    const float w[IqGrid::kMaxGroup] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int e = 0; e < g.n_entries(); e += 7) {
      float err = -1.0f;
      ASSERT_EQ(g.project(g.values(e), w, 0.0f, &err), e) << tensor_type_name(type);
      EXPECT_EQ(err, 0.0f);
    }
  }
}

TEST(IqQuantize, OneAndTwoBitTypesRefuseWithoutImportance) {
  // llama.cpp refuses IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS and IQ2_S without an
  // importance matrix; IQ3 types do not need one.
  const TensorType need[] = {TensorType::IQ1_S, TensorType::IQ1_M, TensorType::IQ2_XXS, TensorType::IQ2_XS,
                             TensorType::IQ2_S};
  std::vector<float> x(256, 0.5f), imp(256, 1.0f);
  std::vector<uint8_t> out(1024);
  for (const TensorType t : need) {
    EXPECT_TRUE(type_traits(t).needs_imatrix) << tensor_type_name(t);
    EXPECT_THROW(quantize_rows(t, x.data(), out.data(), 1, 256, nullptr), InvalidArgument) << tensor_type_name(t);
    EXPECT_NO_THROW(quantize_rows(t, x.data(), out.data(), 1, 256, imp.data())) << tensor_type_name(t);
  }
  for (const TensorType t : {TensorType::IQ3_S, TensorType::IQ3_XXS}) {
    EXPECT_FALSE(type_traits(t).needs_imatrix);
    EXPECT_NO_THROW(quantize_rows(t, x.data(), out.data(), 1, 256, nullptr)) << tensor_type_name(t);
  }
}

TEST(IqQuantize, ZeroAndConstantRowsStayFinite) {
  std::vector<float> imp(512, 1.0f), back(512);
  std::vector<uint8_t> out(1024);
  for (const TensorType t : kIqTypes) {
    for (const float v : {0.0f, 1.0f, -3.0f}) {
      std::vector<float> x(512, v);
      quantize_rows(t, x.data(), out.data(), 1, 512, imp.data());
      dequantize_row_ref(t, out.data(), back.data(), 512);
      for (const float b : back) {
        ASSERT_TRUE(std::isfinite(b)) << tensor_type_name(t);
        if (v == 0.0f) {
          ASSERT_EQ(b, 0.0f) << tensor_type_name(t);
        }
      }
    }
  }
}

// RMSE of our quantization of one f32 tensor against the original.
double rmse_of(const gguf::TensorInfo& t, TensorType type, const float* importance) {
  const int64_t n_per_row = t.ne[0];
  const int64_t n_rows = static_cast<int64_t>(t.n_elements) / n_per_row;
  const auto* src = reinterpret_cast<const float*>(t.data);
  const TypeTraits& tt = type_traits(type);
  const uint64_t row_bytes = static_cast<uint64_t>(n_per_row / tt.block_size) * tt.block_bytes;
  std::vector<uint8_t> q(row_bytes * static_cast<uint64_t>(n_rows));
  quantize_rows(type, src, q.data(), n_rows, n_per_row, importance);
  std::vector<float> back(static_cast<size_t>(n_per_row));
  double sum = 0.0;
  for (int64_t r = 0; r < n_rows; ++r) {
    dequantize_row_ref(type, q.data() + static_cast<uint64_t>(r) * row_bytes, back.data(), n_per_row);
    for (int64_t i = 0; i < n_per_row; ++i) {
      const double d = static_cast<double>(back[static_cast<size_t>(i)]) - src[r * n_per_row + i];
      sum += d * d;
    }
  }
  return std::sqrt(sum / static_cast<double>(t.n_elements));
}

TEST(IqQuantize, OneTensorAtOrBelowLlamaCpp) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(imatrix_path, "golden/synth-llama.imatrix");
  const nlohmann::json golden = nlohmann::json::parse(test::read_file(golden_path));
  const gguf::File f32 = gguf::File::open(f32_path.string());
  const Imatrix im = Imatrix::read(imatrix_path.string());
  // For each IQ type a file of the golden and one of its [256, 128]
  // matrices (the smallest) stored in that type.
  struct Case {
    TensorType type;
    const char* file;
    const char* tensor;
  };
  const Case cases[] = {{TensorType::IQ3_S, "IQ3_S", "blk.1.attn_k.weight"},
                        {TensorType::IQ3_XXS, "IQ3_XXS", "blk.1.attn_v.weight"},
                        {TensorType::IQ2_S, "IQ2_M", "blk.1.attn_k.weight"},
                        {TensorType::IQ2_XS, "IQ2_XS", "blk.1.attn_k.weight"},
                        {TensorType::IQ2_XXS, "IQ2_XXS", "blk.1.attn_k.weight"},
                        {TensorType::IQ1_M, "IQ1_M", "blk.1.attn_k.weight"},
                        {TensorType::IQ1_S, "IQ1_S", "blk.1.attn_k.weight"}};
  for (const auto& [type, file, tensor] : cases) {
    const std::string name = tensor;
    const std::vector<float>* imp = im.importance(name);
    ASSERT_NE(imp, nullptr);
    const auto& g = golden.at(file).at(name);
    ASSERT_EQ(g.at("type").get<std::string>(), type_traits(type).name) << file;
    const double bar = g.at("rmse_vs_f32").get<double>();
    const double ours = rmse_of(f32.tensor(name), type, imp->data());
    EXPECT_LE(ours, bar) << file;
    std::printf("%-8s %s rmse %.5f llama.cpp %.5f ratio %.4f\n", type_traits(type).name, tensor, ours, bar, ours / bar);
  }
}

}  // namespace
}  // namespace ferrite::quant
