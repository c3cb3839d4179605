// What every case of the kernel lab shares: the options, the thread pool,
// the measured hardware limits, the filter and the output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/hw_limits.h"
#include "cpu/thread_pool.h"
#include "filter.h"
#include "report.h"
#include "timing.h"

namespace ferrite::kbench {

constexpr size_t kF16Bytes = 2;
constexpr size_t kF32Bytes = 4;

struct Options {
  std::string filter;                    // PCRE2 pattern searched in "op type shape"; empty: all
  int threads = 0;                       // 0: ThreadPool::default_threads()
  int64_t k = 4096;                      // matmul row length (n_embd)
  int64_t n = 4096;                      // matmul rows
  std::vector<int64_t> m{1, 8, 64, 512};  // activation rows (tokens); also the token counts of the other ops
  std::vector<std::string> types;        // weight types; empty: every type matmul supports
  std::vector<int64_t> depth{512, 4096};  // KV cache cells of decode attention
  int64_t n_head = 32;
  int64_t n_head_kv = 8;
  int64_t head_dim = 128;
  int64_t n_ff = 11008;                  // width of the feed-forward activations
  int reps = 5;
  double min_rep_ms = 10.0;
  double max_op_ms = 500.0;              // slower calls are timed one by one within this budget
  double max_call_ms = 250.0;            // matmul: fewer rows of W when a call would take longer
  size_t cold_mib = 0;                   // operand copies cycled per op (0: 2 x last-level cache)
  bool hot = false;                      // one copy: operands stay in cache
  bool repack = true;                    // matmul: repack weights as the runtime does at load (packed.h)
  size_t probe_mib = 0;                  // bandwidth probe buffer (0: hw_limits' default)
  std::string output = "md";
  std::string isa;                       // dispatch cap (empty: FERRITE_ISA or the host's)
};

// Random values of N(0, sigma).
inline void fill_normal(float* x, size_t n, std::mt19937& rng, float sigma = 1.0f) {
  std::normal_distribution<float> dist(0.0f, sigma);
  for (size_t i = 0; i < n; ++i) x[i] = dist(rng);
}

class Lab {
 public:
  Lab(const Options& opt, cpu::ThreadPool& pool, const cpu::HwLimits& limits_n, const cpu::HwLimits& limits_1,
      size_t cold_bytes)
      : opt_(opt), pool_(pool), limits_n_(limits_n), limits_1_(limits_1), cold_bytes_(cold_bytes),
        filter_(opt.filter) {
    plan_.reps = opt.reps;
    plan_.min_rep_s = opt.min_rep_ms * 1e-3;
    plan_.max_op_s = opt.max_op_ms * 1e-3;
  }

  const Options& opt() const { return opt_; }
  cpu::ThreadPool& pool() { return pool_; }
  std::mt19937& rng() { return rng_; }
  const TimingPlan& plan() const { return plan_; }
  size_t cold_bytes() const { return cold_bytes_; }
  // The limits for a kernel running on `threads` (the pool's count or 1).
  const cpu::HwLimits& limits(int threads) const { return threads == 1 ? limits_1_ : limits_n_; }

  // Whether the case "op type shape" is selected.
  bool selected(const std::string& op, const std::string& type, const std::string& shape) const {
    return filter_.matches(op + " " + type + " " + shape);
  }

  // Fills in the limits of the row's thread count and prints it.
  void emit(Row r, cpu::PeakKind kind) {
    const cpu::HwLimits& h = limits(r.threads);
    emit(std::move(r), h.peak_ops_per_s(kind), cpu::peak_kind_name(kind));
  }
  // With a peak that hw_limits does not measure (operations per second of the row's threads).
  void emit(Row r, double peak_ops_per_s, const std::string& peak_name) {
    r.read_bytes_per_s = limits(r.threads).read_bytes_per_s;
    r.peak_ops_per_s = peak_ops_per_s;
    r.peak_name = peak_name;
    std::fputs((opt_.output == "csv" ? csv_row(r) : markdown_row(r)).c_str(), stdout);
    std::fflush(stdout);
  }

 private:
  static constexpr uint32_t kSeed = 20261122;
  const Options& opt_;
  cpu::ThreadPool& pool_;
  cpu::HwLimits limits_n_;
  cpu::HwLimits limits_1_;
  size_t cold_bytes_;
  Filter filter_;
  std::mt19937 rng_{kSeed};
  TimingPlan plan_;
};

}  // namespace ferrite::kbench
