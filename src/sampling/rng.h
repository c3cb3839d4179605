// The random numbers of the sampler chain. Each random stage (XTC, the final
// draw, mirostat) owns its own stream, derived from the user's seed and a
// stage tag, so that stages never share (and correlate) their draws and a
// seed gives the same sequence on every run, build and thread count.
#pragma once

#include <cstdint>
#include <random>

namespace ferrite::sampling {

// llama.cpp's LLAMA_DEFAULT_SEED: "pick a random seed".
constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;

// One step of SplitMix64 (Steele, Lea, Flood 2014): a bijective mixer used to
// turn (seed, stream tag) into independent-looking engine seeds.
uint64_t splitmix64(uint64_t x);

// kRandomSeed becomes a seed from std::random_device; any other value is kept.
uint64_t resolve_seed(uint64_t seed);

class Rng {
 public:
  // The stream `stream` of seed `seed` (seed already resolved).
  Rng(uint64_t seed, uint64_t stream);

  // Uniform in [0, 1) with 53 random bits. Uses only the engine's raw output
  // (std::mt19937_64 is fully specified by the standard), never a standard
  // distribution, whose algorithm differs between libraries.
  double uniform();

 private:
  std::mt19937_64 engine_;
};

}  // namespace ferrite::sampling
