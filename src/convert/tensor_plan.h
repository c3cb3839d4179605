// Matching a checkpoint's tensors to an architecture's rules: every tensor
// is mapped or dropped (an unmapped one is an error, as in llama.cpp),
// experts are gathered into one 3-D tensor per layer, shapes are checked
// against config.json, and each output gets its GGUF type by llama.cpp's
// rules (1-D tensors, norms, routers, position and token-type embeddings and
// non-".weight" tensors stay F32; Q8_0 rows that are not a multiple of 32
// fall back to F16).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/arch.h"
#include "convert/safetensors.h"
#include "gguf/tensor_type.h"

namespace ferrite::convert {

struct PlannedTensor {
  std::string name;                     // GGUF name
  std::vector<const StTensor*> sources; // one, or one per expert (stacked)
  std::vector<float> generated;         // data made by the converter (no sources)
  std::vector<int64_t> shape;           // final, outermost first
  uint32_t flags = 0;                   // TensorFlags to apply to each source
  float scale = 1.0f;                   // multiplies the data after the transforms (ArchDef::finish)
  TensorType type = TensorType::F32;

  // GGUF's ne: the shape innermost first.
  std::vector<int64_t> ne() const { return {shape.rbegin(), shape.rend()}; }
};

// Plans the tensors. `outtype` is F32, F16, BF16 or Q8_0. Throws ModelError
// for unmapped tensors, missing ones, experts out of range, shapes that do
// not match config.json, and non-float dtypes.
std::vector<PlannedTensor> plan_tensors(const ArchDef& arch, const Checkpoint& ckpt, const Params& params,
                                        std::vector<ExtraTensor> extra, TensorType outtype);

// "model.layers.3.mlp.experts.7.w1.weight" -> "model.layers.{bid}.mlp.experts.{xid}.w1.weight", 3, 7
struct NameKey {
  std::string key;
  int64_t bid = -1, xid = -1;
};
NameKey name_key(const std::string& name);
// A rule's GGUF pattern with {bid} replaced.
std::string with_bid(const char* pattern, int64_t bid);
// Rows of `heads` heads, each [2][half] -> [half][2] (llama.cpp's Q/K permute); ModelError naming `name`.
void permute_rows(std::vector<float>& d, int64_t rows, int64_t cols, int64_t heads, const std::string& name);

// The data of a planned tensor as float32, transforms applied ([shape]).
std::vector<float> tensor_data(const PlannedTensor& t, const Dims& dims);

}  // namespace ferrite::convert
