// A model with LoRA adapters merged into its weights, for the tests that
// check an adapter applied at run time against it: every tensor of an F32
// base model copied, W + s * B A added (in double) where an adapter adapts
// W, with s = scale * alpha / r (or scale without alpha), as llama.cpp and
// PEFT define the merge. Written to `path`.
#pragma once

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "convert/lora_writer.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace ferrite::test {

inline void write_merged(const gguf::File& base, const std::vector<std::pair<const convert::LoraFile*, float>>& adapters,
                         const std::string& path) {
  gguf::Writer w;
  w.copy_metadata(base);
  for (const gguf::TensorInfo& t : base.tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims));
  }
  w.open(path);
  for (const gguf::TensorInfo& t : base.tensors()) {
    std::vector<uint8_t> bytes(t.data, t.data + t.n_bytes);
    for (const auto& [f, scale] : adapters) {
      for (const convert::LoraPair& p : f->pairs) {
        if (p.base != t.name) continue;
        if (t.type != TensorType::F32) throw std::runtime_error("merging needs an F32 base tensor: " + t.name);
        const double s = f->alpha != 0.0f ? static_cast<double>(scale) * f->alpha / static_cast<double>(p.rank) : scale;
        float* wv = reinterpret_cast<float*>(bytes.data());
        for (int64_t o = 0; o < p.n_out; ++o) {
          for (int64_t i = 0; i < p.n_in; ++i) {
            double d = 0;
            for (int64_t k = 0; k < p.rank; ++k) {
              d += static_cast<double>(p.b[static_cast<size_t>(o * p.rank + k)]) * p.a[static_cast<size_t>(k * p.n_in + i)];
            }
            wv[o * p.n_in + i] = static_cast<float>(wv[o * p.n_in + i] + s * d);
          }
        }
      }
    }
    w.write_tensor_data(bytes.data(), bytes.size());
  }
  w.close();
}

}  // namespace ferrite::test
