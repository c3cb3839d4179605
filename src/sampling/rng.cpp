#include "sampling/rng.h"

namespace ferrite::sampling {
namespace {
constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;  // 2^-53
constexpr int kDroppedBits = 11;                              // 64 - 53
}  // namespace

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t resolve_seed(uint64_t seed) {
  if (seed != kRandomSeed) return seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

Rng::Rng(uint64_t seed, uint64_t stream) : engine_(splitmix64(seed ^ splitmix64(stream))) {}

double Rng::uniform() { return static_cast<double>(engine_() >> kDroppedBits) * kTwoPowMinus53; }

}  // namespace ferrite::sampling
