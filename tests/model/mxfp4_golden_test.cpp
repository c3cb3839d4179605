// MXFP4 end to end: synth-llama-f32.gguf quantized by ferrite's MXFP4 preset
// (quant/mxfp4.cpp gives ggml's bytes, tests/quant/mxfp4_test.cpp), then
// evaluated, against ik_llama.cpp 8337e4c's logits of that same file
// (tests/model/golden/synth-llama-MXFP4.ik.p1.json: /work/peers/tools/golden-ik
// golden_dump -i <p1 tokens> --no-bos, AVX2 build, outside the repository).
//
// ik multiplies MXFP4 with activations in its own 8-bit formats (Q8_2_X4 on
// AVX2, bf16 block scales), not Q8_0 as ferrite and llama.cpp do, so its
// logits sit about as far from ours as its Q4_0/Q8_0 ones from llama.cpp
// c392e50's (its README: 0.72 and 0.87 absolute on this model). Measured
// here (AVX2): 0.026 of the logit scale at worst against ik, 0.031 against
// ferrite's own F32 evaluation of the dequantized MXFP4 weights (the same
// weights; only the 8-bit activations differ). Both are held to 0.05, the
// existing quantized goldens' per-position bound (golden_quant_test.cpp);
// MXFP4 quantization itself moves these logits by 0.32 of the scale (ik's
// MXFP4 against c392e50's F32 golden), so a wrong code, nibble order or
// scale would be far outside.
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "golden.h"
#include "model/model.h"
#include "quant/dequantize.h"
#include "quant/mix.h"
#include "quant/type_traits.h"
#include "single_sequence.h"
#include "support/test_data.h"

namespace ferrite {
namespace {

constexpr double kIkTol = 0.05;    // relative to the logit scale, every position (measured 0.026)
constexpr double kSelfTol = 0.05;  // relative, against ferrite's F32 run of the same weights (measured 0.031)

// `in` with its weights planned by `preset`: quantized (as `ferrite quantize`
// does), or with `dequantized` set, quantized and stored back as F32.
void write_model(const gguf::File& in, const char* preset, bool dequantized, const std::string& path) {
  const quant::Preset* p = quant::find_preset(preset);
  ASSERT_NE(p, nullptr);
  const std::vector<TensorType> types = quant::plan_mix(in, *p, quant::MixOptions{});
  gguf::Writer w;
  w.copy_metadata(in);
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& t = in.tensors()[i];
    w.add_tensor(t.name, dequantized && t.type == TensorType::F32 ? TensorType::F32 : types[i],
                 std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
  }
  w.open(path);
  for (size_t i = 0; i < types.size(); ++i) {
    const auto& t = in.tensors()[i];
    ASSERT_EQ(t.type, TensorType::F32) << t.name;
    if (types[i] == t.type) {
      w.write_tensor_data(t.data, t.n_bytes);
      continue;
    }
    const int64_t k = t.ne[0], rows = static_cast<int64_t>(t.n_elements) / k;
    const auto* src = reinterpret_cast<const float*>(t.data);
    const uint64_t rb = tensor_row_bytes(types[i], static_cast<uint64_t>(k));
    std::vector<uint8_t> q(rb * static_cast<uint64_t>(rows));
    quant::quantize_rows(types[i], src, q.data(), rows, k, nullptr);
    if (!dequantized) {
      w.write_tensor_data(q.data(), q.size());
      continue;
    }
    std::vector<float> back(t.n_elements);
    for (int64_t r = 0; r < rows; ++r) quant::dequantize_row_ref(types[i], q.data() + r * rb, back.data() + r * k, k);
    w.write_tensor_data(back.data(), back.size() * sizeof(float));
  }
  w.close();
}

std::vector<float> eval(const std::string& path, const std::vector<int32_t>& tokens) {
  auto model = model::Model::load(path);
  test::SingleSequence seq(*model, 1024, 2);
  return seq.eval(tokens, 512);
}

TEST(GoldenMxfp4, SynthLlamaAgainstIkLlamaCpp) {
  FERRITE_SHARED_FILE(f32_path, "models/synth/synth-llama-f32.gguf");
  const test::Golden g = test::load_golden(std::filesystem::path(FERRITE_SOURCE_DIR) / "tests/model/golden/synth-llama-MXFP4.ik.p1.json");
  const gguf::File in = gguf::File::open(f32_path.string());
  const std::filesystem::path dir = ::testing::TempDir();
  const std::string q_path = (dir / "synth-llama-MXFP4.gguf").string();
  const std::string d_path = (dir / "synth-llama-MXFP4-dequantized.gguf").string();
  write_model(in, "MXFP4", false, q_path);
  write_model(in, "MXFP4", true, d_path);
  const std::vector<float> ours = eval(q_path, g.tokens), plain = eval(d_path, g.tokens);
  const size_t nv = ours.size() / g.tokens.size();
  double worst_ik = 0, worst_self = 0;
  for (size_t i = 0; i < g.positions.size(); ++i) {
    const std::span<const float> row(ours.data() + i * nv, nv);
    const double scale = test::logit_scale(g.positions[i]);
    const double ik = test::max_logit_error(row, g.positions[i]) / scale;
    double self = 0;
    for (size_t v = 0; v < nv; ++v) self = std::max(self, static_cast<double>(std::fabs(row[v] - plain[i * nv + v])));
    self /= scale;
    worst_ik = std::max(worst_ik, ik);
    worst_self = std::max(worst_self, self);
    EXPECT_LE(ik, kIkTol) << "position " << i;
    EXPECT_LE(self, kSelfTol) << "position " << i;
  }
  std::printf("  MXFP4 synth-llama p1: max relative error %.3g against ik_llama.cpp, %.3g against F32 of the same "
              "weights\n", worst_ik, worst_self);
  std::filesystem::remove(q_path);
  std::filesystem::remove(d_path);
}

}  // namespace
}  // namespace ferrite
