// Quality bar: every quantized tensor of the llama.cpp-quantized synth-llama
// files, re-quantized by us from synth-llama-f32.gguf with the same
// importance matrix, has an RMSE against the f32 original no larger than the
// one the golden records for llama.cpp (same type, same tensor).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "gguf/file.h"
#include "quant/dequantize.h"
#include "quant/imatrix.h"
#include "quant/type_traits.h"
#include "support/test_data.h"

namespace ferrite::quant {
namespace {

struct Job {
  std::string tensor;
  TensorType type;
  double golden_rmse;
};

// RMSE of our quantization of `t` (f32) to `type` against the original.
double our_rmse(const gguf::TensorInfo& t, TensorType type, const Imatrix& im) {
  const int64_t n_per_row = t.ne[0];
  const int64_t n_rows = static_cast<int64_t>(t.n_elements) / n_per_row;
  const auto* src = reinterpret_cast<const float*>(t.data);
  const std::vector<float>* imp = im.importance(t.name);
  const TypeTraits& tt = type_traits(type);
  std::vector<uint8_t> q(static_cast<size_t>(n_rows * n_per_row / tt.block_size) * tt.block_bytes);
  quantize_rows(type, src, q.data(), n_rows, n_per_row, imp ? imp->data() : nullptr);
  std::vector<float> back(static_cast<size_t>(n_per_row));
  const uint64_t row_bytes = static_cast<uint64_t>(n_per_row / tt.block_size) * tt.block_bytes;
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

TEST(QuantizeRmseSlow, AtOrBelowLlamaCppPerTensor) {
  FERRITE_SHARED_FILE(golden_path, "golden/dequant-synth-llama.json");
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  FERRITE_SHARED_FILE(imatrix_path, "golden/synth-llama.imatrix");
  const nlohmann::json golden = nlohmann::json::parse(test::read_file(golden_path));
  const gguf::File f32 = gguf::File::open(f32_path.string());
  const Imatrix im = Imatrix::read(imatrix_path.string());

  // Every distinct (type, tensor) the golden has, for the types we quantize.
  std::map<std::pair<std::string, std::string>, Job> jobs;
  for (const auto& [file, tensors] : golden.items()) {
    for (const auto& [name, e] : tensors.items()) {
      const auto type = tensor_type_from_name(e.at("type").get<std::string>());
      ASSERT_TRUE(type.has_value());
      const TypeTraits* tt = find_type_traits(*type);
      if (*type == TensorType::F32 || tt == nullptr || tt->from_float == nullptr) continue;
      jobs[{tt->name, name}] = Job{name, *type, e.at("rmse_vs_f32").get<double>()};
    }
  }
  ASSERT_FALSE(jobs.empty());
  std::map<std::string, std::pair<double, double>> worst;  // type -> (max ratio, mean ratio sum)
  std::map<std::string, int> count;
  std::map<std::string, double> seconds;
  for (const auto& [key, job] : jobs) {
    const gguf::TensorInfo& t = f32.tensor(job.tensor);
    const auto start = std::chrono::steady_clock::now();
    const double ours = our_rmse(t, job.type, im);
    seconds[key.first] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double ratio = job.golden_rmse > 0 ? ours / job.golden_rmse : (ours == 0 ? 1.0 : INFINITY);
    auto& w = worst[key.first];
    w.first = std::max(w.first, ratio);
    w.second += ratio;
    count[key.first] += 1;
    EXPECT_LE(ours, job.golden_rmse) << key.first << " " << job.tensor << " ratio " << ratio;
  }
  for (const auto& [type, w] : worst) {
    std::printf("rmse ratio ours/llama.cpp %-8s tensors %2d  max %.4f  mean %.4f  (%.2f s)\n", type.c_str(),
                count[type], w.first, w.second / count[type], seconds[type]);
  }
}

TEST(Imatrix, ReadsTheGoldenAndRoundTrips) {
  FERRITE_SHARED_FILE(imatrix_path, "golden/synth-llama.imatrix");
  const Imatrix im = Imatrix::read(imatrix_path.string());
  // The synth llama has 2 layers × 7 matrices fed by activations.
  EXPECT_EQ(im.entries().size(), 14u);
  ASSERT_NE(im.importance("blk.0.attn_q.weight"), nullptr);
  EXPECT_EQ(im.importance("blk.0.attn_q.weight")->size(), 256u);  // n_embd of the synth model
  EXPECT_EQ(im.importance("blk.1.ffn_down.weight")->size(), 512u);  // n_ff
  EXPECT_EQ(im.dataset, "calib.txt");
  const std::string raw = test::read_file(imatrix_path);
  const std::vector<uint8_t> again = im.to_bytes();
  EXPECT_EQ(std::string(again.begin(), again.end()), raw);
}

TEST(Imatrix, RejectsTruncatedFiles) {
  const uint8_t bad[] = {1, 0, 0, 0, 5, 0, 0, 0, 'a'};
  EXPECT_THROW(Imatrix::parse(bad, sizeof(bad), "bad"), FormatError);
  const uint8_t huge[] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f};
  EXPECT_THROW(Imatrix::parse(huge, sizeof(huge), "huge"), FormatError);
}

}  // namespace
}  // namespace ferrite::quant
