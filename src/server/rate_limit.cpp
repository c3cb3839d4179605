#include "server/rate_limit.h"

#include <algorithm>
#include <cmath>

namespace ferrite::server {
namespace {
constexpr double kSecondsPerMinute = 60.0;
}  // namespace

RateLimiter::RateLimiter(double per_minute, double burst, size_t max_keys)
    : per_second_(per_minute > 0.0 ? per_minute / kSecondsPerMinute : 0.0),
      burst_(std::max(1.0, burst)),
      max_keys_(std::max<size_t>(1, max_keys)) {}

void RateLimiter::refill(Bucket& b, Clock::time_point now) const {
  const double dt = std::chrono::duration<double>(now - b.last).count();
  if (dt > 0) {
    b.tokens = std::min(burst_, b.tokens + dt * per_second_);
    b.last = now;
  }
}

void RateLimiter::evict(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    refill(it->second, now);
    it = it->second.tokens >= burst_ ? buckets_.erase(it) : std::next(it);
  }
  // Still full of busy keys: drop the one that is nearest to full.
  if (buckets_.size() >= max_keys_) {
    auto best = std::max_element(buckets_.begin(), buckets_.end(),
                                 [](const auto& a, const auto& b) { return a.second.tokens < b.second.tokens; });
    buckets_.erase(best);
  }
}

bool RateLimiter::allow(const std::string& key, Clock::time_point now, double* retry_after) {
  if (!enabled()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_keys_) evict(now);
    it = buckets_.emplace(key, Bucket{burst_, now}).first;
  }
  Bucket& b = it->second;
  refill(b, now);
  if (b.tokens >= 1.0) {
    b.tokens -= 1.0;
    return true;
  }
  if (retry_after) *retry_after = (1.0 - b.tokens) / per_second_;
  return false;
}

size_t RateLimiter::keys() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buckets_.size();
}

}  // namespace ferrite::server
