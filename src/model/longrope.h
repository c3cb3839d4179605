// LongRoPE (phi3): two sets of per-pair frequency divisors, the "short" ones
// for contexts up to the original training context
// (<arch>.rope.scaling.original_context_length) and the "long" ones beyond
// it, chosen by the context size as llama.cpp chooses them (the cache size
// here; llama.cpp's context per sequence). The magnitude (attention)
// factor, when the file does not give rope.scaling.attn_factor, is
// sqrt(1 + ln(s) / ln(n_ctx_orig)) for s = n_ctx_train / n_ctx_orig > 1
// (the converter's definition), else 1.
#pragma once

#include <cstdint>

namespace ferrite::model {

// The factors for a context of n_ctx cells: long_f when n_ctx exceeds
// n_ctx_orig and long_f exists, else short_f (either may be null).
inline const float* longrope_factors(const float* short_f, const float* long_f, int64_t n_ctx, int64_t n_ctx_orig) {
  return long_f != nullptr && n_ctx > n_ctx_orig ? long_f : short_f;
}

// Attention factor from the training and original contexts.
float longrope_attn_factor(int64_t n_ctx_train, int64_t n_ctx_orig);

}  // namespace ferrite::model
