#include "model/pooling.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace ferrite::model {

void pool_sequence(Pooling pooling, const float* states, const int32_t* rows, int64_t n_rows, int64_t n_embd,
                   float* out) {
  if (n_rows <= 0) throw InvalidArgument("pooling a sequence without tokens");
  switch (pooling) {
    case Pooling::None:
      throw InvalidArgument("the model has no pooling: ask for token embeddings instead");
    case Pooling::Rank:
      throw InvalidArgument("rank pooling is the model's classification head, not a pooling of states");
    case Pooling::Cls:
      std::copy_n(states + static_cast<int64_t>(rows[0]) * n_embd, n_embd, out);
      return;
    case Pooling::Last:
      std::copy_n(states + static_cast<int64_t>(rows[n_rows - 1]) * n_embd, n_embd, out);
      return;
    case Pooling::Mean: {
      std::fill_n(out, n_embd, 0.0f);
      for (int64_t i = 0; i < n_rows; ++i) {
        const float* r = states + static_cast<int64_t>(rows[i]) * n_embd;
        for (int64_t d = 0; d < n_embd; ++d) out[d] += r[d];
      }
      const float inv = 1.0f / static_cast<float>(n_rows);
      for (int64_t d = 0; d < n_embd; ++d) out[d] *= inv;
      return;
    }
  }
}

Pooling pooling_from_gguf(uint64_t value, const std::string& path) {
  switch (value) {
    case 0: return Pooling::None;
    case 1: return Pooling::Mean;
    case 2: return Pooling::Cls;
    case 3: return Pooling::Last;
    case 4: return Pooling::Rank;
    default:
      throw ModelError(path + ": pooling_type " + std::to_string(value) +
                       " is not supported (none, mean, cls, last, rank)");
  }
}

}  // namespace ferrite::model
