// Binding a model's weights by tensor name, with shape checks. Weights stay
// in the memory-mapped file in their stored type; a Tensor is a view.
// Binding helpers the families share (norms, the token table) are in blocks.h.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "backend/weight.h"
#include "gguf/file.h"

namespace ferrite::model {

// A weight tensor in the mapped file (null when an optional tensor is absent),
// and its copy repacked for the CPU's products when the model made one
// (packed_weights.h): backend/weight.h.
using Tensor = backend::Weight;

class WeightBinder {
 public:
  explicit WeightBinder(const gguf::File& file) : file_(file) {}

  // A tensor that must exist with exactly these dimensions (innermost first).
  Tensor require(const std::string& name, std::initializer_list<int64_t> shape) const;
  // As require(), but absent is allowed (returns a null Tensor).
  Tensor optional(const std::string& name, std::initializer_list<int64_t> shape) const;
  // Norm weights and biases: f32 vectors of n elements.
  Tensor require_vec(const std::string& name, int64_t n) const;
  Tensor optional_vec(const std::string& name, int64_t n) const;

  static std::string layer_name(int64_t layer, const char* suffix) {
    return "blk." + std::to_string(layer) + "." + suffix;
  }

  const gguf::File& file() const { return file_; }

 private:
  Tensor check(const gguf::TensorInfo* t, const std::string& name, std::initializer_list<int64_t> shape) const;
  const gguf::File& file_;
};

}  // namespace ferrite::model
