// T5's relative position bias (Raffel et al. 2020): instead of position
// embeddings, each head adds a learned scalar to its attention scores, one
// per bucket of the key's position relative to the query's. Buckets as
// llama.cpp c392e50 computes them (llama_relative_position_bucket, a fact of
// its inputs): with r = k_pos - q_pos and N buckets,
//   bidirectional (encoder): N /= 2, the bucket starts at N for r > 0, and
//     d = |r|; causal (decoder): d = max(-r, 0);
//   exact = N / 2; d < exact: bucket += d; otherwise bucket += min(N - 1,
//   floor(exact + log(d / exact) * (N - exact) / log(128 / exact))).
// From a distance of 128 on, every bucket is the last, so a table of the
// bias per head and distance up to 128 (both signs when bidirectional)
// serves every position: the kernels look it up by distance, clamped.
#pragma once

#include <cstdint>
#include <vector>

namespace ferrite::cpu {

constexpr int64_t kRelMaxDistance = 128;

// The bucket of relative position r = k_pos - q_pos.
int32_t rel_pos_bucket(int32_t r, int64_t n_buckets, bool bidirectional);

// The bias per head and distance from attn_rel_b (f32 [n_buckets, n_head]):
// causal: out [n_head, kRelMaxDistance + 1], element h * (kRelMaxDistance + 1)
// + min(q - k, kRelMaxDistance) for q >= k; bidirectional: out [n_head,
// 2 kRelMaxDistance + 1], element h * (2 kRelMaxDistance + 1) + kRelMaxDistance
// + clamp(k - q, -kRelMaxDistance, kRelMaxDistance).
void rel_bias_table(const float* rel_b, int64_t n_buckets, int64_t n_head, bool bidirectional,
                    std::vector<float>& out);

inline int64_t rel_bias_width(bool bidirectional) {
  return bidirectional ? 2 * kRelMaxDistance + 1 : kRelMaxDistance + 1;
}

}  // namespace ferrite::cpu
