// Requests per key (an API key, or a client address when there are none)
// with a token bucket: up to `per_minute` a minute on average, in bursts of
// up to `burst`. The table of keys is bounded: full buckets (keys that have
// been quiet long enough to be back to their burst) are forgotten first.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ferrite::server {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // per_minute <= 0: no limit.
  RateLimiter(double per_minute, double burst, size_t max_keys = 4096);

  // Takes one request from `key`'s bucket; false (and the seconds until one
  // is free in `retry_after`) when empty.
  bool allow(const std::string& key, Clock::time_point now, double* retry_after = nullptr);
  bool enabled() const { return per_second_ > 0.0; }
  size_t keys() const;

 private:
  struct Bucket {
    double tokens;
    Clock::time_point last;
  };
  void refill(Bucket& b, Clock::time_point now) const;
  void evict(Clock::time_point now);

  double per_second_;
  double burst_;
  size_t max_keys_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace ferrite::server
