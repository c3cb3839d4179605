// Pooling of an encoder's token states into one embedding per sequence.
#pragma once

#include <cstdint>
#include <string>

#include "model/hparams.h"

namespace ferrite::model {

// out [n_embd] from the states [*, n_embd] of the rows `rows[0..n_rows)`
// of one sequence, in position order: their mean (Mean), the first (Cls) or
// the last (Last). Throws InvalidArgument for Pooling::None, Pooling::Rank
// (the architecture's head computes it: ForwardBatch::classify) or no rows.
void pool_sequence(Pooling pooling, const float* states, const int32_t* rows, int64_t n_rows, int64_t n_embd,
                   float* out);

// Parses <arch>.pooling_type's value; throws ModelError for unsupported ones.
Pooling pooling_from_gguf(uint64_t value, const std::string& path);

}  // namespace ferrite::model
