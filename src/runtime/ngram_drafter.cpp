#include "core/error.h"
#include "runtime/drafter.h"

#include <algorithm>

namespace ferrite::runtime {

NgramDrafter::NgramDrafter(NgramParams p) : p_(p) {
  constexpr int kMax = 1024;
  if (p_.size_n < 1 || p_.size_n > kMax) {
    throw InvalidArgument("--spec-ngram-simple-size-n must be in 1.." + std::to_string(kMax) + ", not " +
                          std::to_string(p_.size_n));
  }
  if (p_.size_m < 1 || p_.size_m > kMax) {
    throw InvalidArgument("--spec-ngram-simple-size-m must be in 1.." + std::to_string(kMax) + ", not " +
                          std::to_string(p_.size_m));
  }
}

std::vector<int32_t> ngram_lookup(std::span<const int32_t> context, int n, int n_max) {
  const auto len = static_cast<int64_t>(context.size());
  if (n < 1 || n_max < 1 || len <= n) return {};
  const std::span<const int32_t> key = context.subspan(static_cast<size_t>(len - n));
  // Latest start s < len - n whose n tokens equal the key and are followed by at least one token.
  for (int64_t s = len - n - 1; s >= 0; --s) {
    if (!std::equal(key.begin(), key.end(), context.begin() + s)) continue;
    const int64_t from = s + n;
    const int64_t to = std::min(len, from + n_max);
    return {context.begin() + from, context.begin() + to};
  }
  return {};
}

std::vector<int32_t> NgramDrafter::draft(std::span<const int32_t> context, int n_max) {
  return ngram_lookup(context, p_.size_n, std::min(n_max, p_.size_m));
}

}  // namespace ferrite::runtime
