#include "sampling/dry.h"

#include <algorithm>
#include <cmath>

namespace ferrite::sampling {
namespace {
constexpr size_t kMaxBreakerBytes = 40;
constexpr size_t kMaxBreakerTail = 20;
// ln(FLT_MAX): the exponent of base is capped so the penalty stays finite.
constexpr double kLnFloatMax = 88.7228391;
constexpr float kMinGrowingBase = 1.000001f;

void add_unique(DryBreakers& out, int32_t head, std::vector<int32_t> tail) {
  auto range = out.equal_range(head);
  for (auto it = range.first; it != range.second; ++it) {
    if (it->second == tail) return;
  }
  out.emplace(head, std::move(tail));
}
}  // namespace

DryBreakers dry_breakers_from_strings(const std::vector<std::string>& breakers, const TokenText& text) {
  DryBreakers out;
  for (std::string b : breakers) {
    if (b.empty()) continue;
    if (b.size() > kMaxBreakerBytes) b.resize(kMaxBreakerBytes);
    for (size_t id = 0; id < text.pieces.size(); ++id) {
      const std::string& word = text.pieces[id];
      const auto token = static_cast<int32_t>(id);
      if (word.find(b) != std::string::npos) {
        add_unique(out, token, {});
        continue;
      }
      if (!text.tokenize) continue;
      // Every position where the word's suffix is a proper prefix of b.
      for (size_t pos = word.find(b[0]); pos != std::string::npos; pos = word.find(b[0], pos + 1)) {
        const size_t len = word.size() - pos;  // < b.size(), else find() above matched
        if (word.compare(pos, len, b, 0, len) != 0) continue;
        std::vector<int32_t> tail = text.tokenize(std::string_view(b).substr(len));
        if (tail.size() > kMaxBreakerTail) tail.resize(kMaxBreakerTail);
        add_unique(out, token, std::move(tail));
      }
    }
  }
  return out;
}

DryBreakers dry_breakers_from_tokens(const std::vector<std::vector<int32_t>>& breakers) {
  DryBreakers out;
  for (const auto& b : breakers) {
    if (b.empty()) continue;
    add_unique(out, b[0], std::vector<int32_t>(b.begin() + 1, b.end()));
  }
  return out;
}

Dry::Dry(const DryParams& params, DryBreakers breakers)
    : params_(params),
      breakers_(std::move(breakers)),
      window_(params.last_n > 0 ? static_cast<size_t>(params.last_n) : 0) {}

bool Dry::active() const {
  return params_.multiplier != 0.0f && params_.base >= 1.0f && params_.last_n > 0;
}

void Dry::accept(int32_t token) {
  if (active()) window_.push(token);
}

int Dry::repeat_limit(int n) const {
  // Walk back from the most recent token; the first token that ends a whole
  // breaker (its head here, its tail after it) limits repeats to the tokens
  // after the breaker. Among breakers with the same head the longest wins.
  for (int i = 0; i < n; ++i) {
    auto range = breakers_.equal_range(window_.from_end(static_cast<size_t>(i)));
    int longest = -1;
    for (auto it = range.first; it != range.second; ++it) {
      const auto& tail = it->second;
      const int len = static_cast<int>(tail.size());
      if (len <= longest || len > i) continue;
      bool match = true;
      for (int j = 0; j < len && match; ++j) {
        match = tail[static_cast<size_t>(j)] == window_.from_end(static_cast<size_t>(i - j - 1));
      }
      if (match) longest = len;
    }
    if (longest >= 0) return i - longest;
  }
  return n;
}

void Dry::apply(Candidates& c) {
  max_repeat_.clear();
  if (!active()) return;
  const int n = static_cast<int>(window_.size());
  if (n <= params_.allowed_length) return;
  const int limit = repeat_limit(n);
  if (limit < params_.allowed_length) return;

  // s[i] = window_.from_end(i): the context reversed. z_[k] = length of the
  // longest common prefix of s and s[k..] (the Z-function), i.e. how many of
  // the most recent tokens also end at s[k]; s[k - 1] is the token that
  // followed that earlier occurrence.
  auto s = [&](int i) { return window_.from_end(static_cast<size_t>(i)); };
  z_.assign(static_cast<size_t>(n), 0);
  int left = 0, right = 0;  // the Z-box [left, right): s[left..right) == s[0..right-left)
  for (int k = 1; k < n; ++k) {
    int len = 0;
    if (k < right) len = std::min(right - k, z_[static_cast<size_t>(k - left)]);
    while (k + len < n && s(len) == s(k + len)) ++len;
    z_[static_cast<size_t>(k)] = len;
    if (k + len > right) {
      left = k;
      right = k + len;
    }
  }
  for (int k = 1; k < n; ++k) {
    const int len = std::min(z_[static_cast<size_t>(k)], limit);
    if (len < params_.allowed_length) continue;
    int& best = max_repeat_[s(k - 1)];
    best = std::max(best, len);
  }

  int max_exponent = 0;
  if (params_.base > kMinGrowingBase) max_exponent = static_cast<int>(kLnFloatMax / std::log(params_.base));
  for_each_listed(c, max_repeat_, [&](Candidate& x, int length) {
    // A one-token breaker is never penalized.
    auto range = breakers_.equal_range(x.id);
    for (auto b = range.first; b != range.second; ++b) {
      if (b->second.empty()) return;
    }
    int exponent = length - params_.allowed_length;
    if (max_exponent > 0) exponent = std::min(exponent, max_exponent);
    x.logit -= params_.multiplier * static_cast<float>(std::pow(static_cast<double>(params_.base), exponent));
  });
  c.sorted = false;
}

}  // namespace ferrite::sampling
