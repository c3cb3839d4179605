// Timing of one kernel alone: repetitions of a batch of calls, each call
// on the next copy of its operands, so that a pass over the copies reads
// more bytes than the last-level cache holds (a decode step streams weights
// and cache from memory: timing the same hot buffer again and again would
// measure the cache instead).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace ferrite::kbench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Per-call times of the repetitions.
struct Timing {
  double median_s = 0.0;
  double min_s = 0.0;
  double max_s = 0.0;
  int64_t calls_per_rep = 0;
};

struct TimingPlan {
  int reps = 5;             // timed repetitions
  double min_rep_s = 0.01;  // a repetition runs calls until it lasts at least this long
  int warmup_calls = 2;     // untimed calls first (scratch allocation, page faults)
  // Calls so slow that warm-up and reps would take longer than this are
  // timed one by one, the first one included (its one-off costs are small
  // next to it), as many as fit (at least two when reps > 1).
  double max_op_s = 0.5;
};

// Upper bound of calls per repetition (very short kernels).
constexpr int64_t kMaxCallsPerRep = int64_t{1} << 20;

// Times call(i) for i = 0, 1, 2, ... (the operand copy index).
template <typename Call>
Timing time_calls(Call&& call, const TimingPlan& plan) {
  int64_t i = 0;
  const auto timed = [&] {
    const auto t0 = Clock::now();
    call(i++);
    return seconds_since(t0);
  };
  Timing t;
  std::vector<double> per_call;
  double last = timed();
  if (last * (plan.reps + plan.warmup_calls) > plan.max_op_s) {
    // Slow: single calls, as many as the budget holds.
    const auto fit = static_cast<int>(plan.max_op_s / last);
    const int more = std::min(plan.reps - 1, std::max(fit - 1, 1));
    per_call.push_back(last);
    for (int r = 0; r < more; ++r) per_call.push_back(timed());
    t.calls_per_rep = 1;
  } else {
    for (int w = 1; w < plan.warmup_calls; ++w) last = timed();
    const double calls = std::ceil(plan.min_rep_s / std::max(last, 1e-9));
    t.calls_per_rep = std::clamp<int64_t>(static_cast<int64_t>(calls), 1, kMaxCallsPerRep);
    for (int r = 0; r < plan.reps; ++r) {
      const auto t0 = Clock::now();
      for (int64_t c = 0; c < t.calls_per_rep; ++c) call(i++);
      per_call.push_back(seconds_since(t0) / static_cast<double>(t.calls_per_rep));
    }
  }
  std::sort(per_call.begin(), per_call.end());
  const size_t n = per_call.size();
  t.median_s = n % 2 == 1 ? per_call[n / 2] : 0.5 * (per_call[n / 2 - 1] + per_call[n / 2]);
  t.min_s = per_call.front();
  t.max_s = per_call.back();
  return t;
}

// Copies of one call's operands ("slots"), enough that a pass over all of
// them touches at least `cold_bytes` (0: a single copy, always hot).
class Rotation {
 public:
  static constexpr size_t kAlign = 64;  // cache line

  Rotation(size_t slot_bytes, size_t cold_bytes) {
    stride_ = (std::max<size_t>(slot_bytes, 1) + kAlign - 1) / kAlign * kAlign;
    copies_ = cold_bytes == 0 ? 1 : std::max<size_t>(1, (cold_bytes + stride_ - 1) / stride_);
    const size_t total = stride_ * copies_;
    void* p = std::aligned_alloc(kAlign, total);
    if (p == nullptr) throw std::bad_alloc();
    mem_.reset(static_cast<uint8_t*>(p));
  }

  uint8_t* slot(int64_t i) { return mem_.get() + static_cast<size_t>(i) % copies_ * stride_; }
  size_t copies() const { return copies_; }

  // Copies slot 0 into every other slot (which also faults their pages in).
  void replicate() {
    for (size_t c = 1; c < copies_; ++c) std::memcpy(mem_.get() + c * stride_, mem_.get(), stride_);
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> mem_;
  size_t stride_ = 0;
  size_t copies_ = 1;
};

}  // namespace ferrite::kbench
