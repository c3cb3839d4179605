#include "model/weights.h"

#include "core/error.h"
#include "cpu/matmul.h"
#include "model/packed_weights.h"

namespace ferrite::model {

Tensor WeightBinder::check(const gguf::TensorInfo* t, const std::string& name,
                           std::initializer_list<int64_t> shape) const {
  std::array<int64_t, gguf::kMaxDims> want{1, 1, 1, 1};
  size_t i = 0;
  for (int64_t d : shape) want[i++] = d;
  if (t->ne != want) {
    std::string w = "[";
    for (size_t j = 0; j < shape.size(); ++j) w += (j ? ", " : "") + std::to_string(want[j]);
    throw ModelError(file_.path() + ": tensor " + name + " has shape " + t->shape_string() + ", expected " + w + "]");
  }
  if (!cpu::matmul_supports(t->type)) {
    throw ModelError(file_.path() + ": tensor " + name + " has type " + tensor_type_name(t->type) +
                     ", which ferrite cannot compute with");
  }
  return Tensor{t, find_packed(t)};
}

Tensor WeightBinder::require(const std::string& name, std::initializer_list<int64_t> shape) const {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  if (t == nullptr) throw ModelError(file_.path() + ": required tensor " + name + " is missing");
  return check(t, name, shape);
}

Tensor WeightBinder::optional(const std::string& name, std::initializer_list<int64_t> shape) const {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  return t == nullptr ? Tensor{} : check(t, name, shape);
}

Tensor WeightBinder::require_vec(const std::string& name, int64_t n) const {
  Tensor t = require(name, {n});
  if (t.info->type != TensorType::F32) {
    throw ModelError(file_.path() + ": tensor " + name + " must be f32, is " + tensor_type_name(t.info->type));
  }
  return t;
}

Tensor WeightBinder::optional_vec(const std::string& name, int64_t n) const {
  const gguf::TensorInfo* t = file_.find_tensor(name);
  return t == nullptr ? Tensor{} : require_vec(name, n);
}

}  // namespace ferrite::model
