// A copy of an F32 GGUF with its weights planned by a quantization preset
// (quant::plan_mix, as `ferrite quantize` does): quantized, or with
// `dequantized` set, quantized and stored back as F32 (the same weights for
// an F32 evaluation). Used by the MXFP4 end-to-end tests.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/dequantize.h"
#include "quant/mix.h"
#include "quant/type_traits.h"

namespace ferrite::test {

inline void write_quantized_copy(const gguf::File& in, const char* preset, bool dequantized, const std::string& path) {
  const quant::Preset* p = quant::find_preset(preset);
  ASSERT_NE(p, nullptr) << preset;
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

}  // namespace ferrite::test
