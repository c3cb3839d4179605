#include "cpu/hw_limits.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>

#include "cpu/features.h"

namespace ferrite::cpu {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr size_t kMinProbeBytes = size_t{256} << 20;
constexpr size_t kFallbackLlcBytes = size_t{32} << 20;
constexpr size_t kLlcMultiple = 8;
// Independent running sums per thread: enough loads in flight to stream.
constexpr int kReadLanes = 8;
constexpr int kStreams = 4;

// Dependent additions per clock-loop iteration (written out in asm so the
// compiler cannot fold them; one cycle each) and iterations per trial
// (~1 ms at 4 GHz). Short trials, best of many: on a shared machine some
// trial runs without being preempted.
constexpr long kChainAddsPerIter = 16;
constexpr long kClockIters = 250'000;
constexpr int kTrials = 20;
constexpr long kPeakIters = 20'000;

size_t llc_bytes() {
  long v = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  v = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return v > 0 ? static_cast<size_t>(v) : kFallbackLlcBytes;
}

// Sums a buffer walking kStreams equal parts of it together: several
// sequential streams per core keep more cache misses in flight than one
// (a matrix tile reads its rows the same way), so the probe finds the rate
// the memory can deliver rather than one stream's latency-bound rate.
uint64_t stream_sum(const uint64_t* p, size_t n) {
  const size_t part = n / kStreams / kReadLanes * kReadLanes;
  uint64_t acc[kStreams][kReadLanes] = {};
  for (size_t i = 0; i < part; i += kReadLanes) {
    for (int s = 0; s < kStreams; ++s) {
      for (int j = 0; j < kReadLanes; ++j) acc[s][j] += p[s * part + i + j];
    }
  }
  uint64_t sum = 0;
  for (size_t i = kStreams * part; i < n; ++i) sum += p[i];
  for (int s = 0; s < kStreams; ++s) {
    for (int j = 0; j < kReadLanes; ++j) sum += acc[s][j];
  }
  return sum;
}

double peak_loop(PeakKind k, long iters) {
  switch (active_isa()) {
    case Isa::Avx512:
      return peak_loop_avx512(k, iters);
    case Isa::Avx2:
      return peak_loop_avx2(k, iters);
    case Isa::Neon:  // no peak loop for ARM yet
    case Isa::NeonI8mm:
    case Isa::Scalar:
      break;
  }
  return 0.0;
}

}  // namespace

std::string peak_kind_name(PeakKind k) {
  switch (k) {
    case PeakKind::F32Fma:
      return "f32-fma";
    case PeakKind::Bf16Dot:
      return "bf16-dot";
    case PeakKind::Int8Dot:
      return "int8-dot";
  }
  return "unknown";
}

PeakKind peak_kind_for(TensorType type) {
  switch (type) {
    case TensorType::F32:
    case TensorType::F16:
      return PeakKind::F32Fma;
    case TensorType::BF16:
      return active_isa() == Isa::Avx512 ? PeakKind::Bf16Dot : PeakKind::F32Fma;
    default:
      return PeakKind::Int8Dot;
  }
}

double measure_read_bandwidth(ThreadPool& pool, size_t bytes, int passes) {
  // Vector loads where the level has them: the scalar walk (compiled for the
  // baseline ISA) measured ~40 GB/s on a Zen 5 where 512-bit loads read ~60,
  // below what the decode kernels themselves reach.
  const auto read_sum = [](const uint64_t* p, size_t n) {
    switch (active_isa()) {
      case Isa::Avx512:
        return read_sum_avx512(p, n);
      case Isa::Avx2:
        return read_sum_avx2(p, n);
      case Isa::Neon:
      case Isa::NeonI8mm:
      case Isa::Scalar:
        break;
    }
    return stream_sum(p, n);
  };
  if (bytes == 0) bytes = std::max(kMinProbeBytes, kLlcMultiple * llc_bytes());
  const size_t n = bytes / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[n]);
  // First touch in parallel (pages land near the threads that read them).
  pool.run([&](int ith, int nth) {
    const Range r = split_range(static_cast<int64_t>(n), ith, nth);
    for (int64_t i = r.begin; i < r.end; ++i) buf[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
  });
  std::vector<uint64_t> sink(static_cast<size_t>(pool.size()));
  double best = 0.0;
  for (int p = 0; p < passes; ++p) {
    const auto t0 = Clock::now();
    pool.run([&](int ith, int nth) {
      const Range r = split_range(static_cast<int64_t>(n), ith, nth);
      sink[static_cast<size_t>(ith)] += read_sum(buf.get() + r.begin, static_cast<size_t>(r.end - r.begin));
    });
    const double s = seconds_since(t0);
    if (s > 0.0) best = std::max(best, static_cast<double>(bytes) / s);
  }
  // The sums are kept so the reads cannot be optimised away.
  volatile uint64_t keep = 0;
  for (uint64_t v : sink) keep = keep + v;
  return best;
}

double measure_clock_hz() {
  double best = 0.0;
  for (int trial = 0; trial < kTrials; ++trial) {
    uint64_t x = static_cast<uint64_t>(trial);
    [[maybe_unused]] const uint64_t step = 1;  // the x86 asm operand
    const auto t0 = Clock::now();
    for (long i = 0; i < kClockIters; ++i) {
#if defined(__x86_64__)
      // Register operands: some cores fold add-immediate chains at rename.
      asm volatile(
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\t"
          "add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
          : "+r"(x)
          : "r"(step));
#else
      x += kChainAddsPerIter;
#endif
    }
    const double s = seconds_since(t0);
    volatile uint64_t keep = x;
    (void)keep;
    if (s > 0.0) best = std::max(best, static_cast<double>(kClockIters * kChainAddsPerIter) / s);
  }
  return best;
}

double measure_ops_per_cycle(PeakKind k, double clock_hz) {
  if (clock_hz <= 0.0) return 0.0;
  double best = 0.0;
  peak_loop(k, kPeakIters / 10);  // wake the vector units (they start at a lower rate)
  for (int trial = 0; trial < kTrials; ++trial) {
    const auto t0 = Clock::now();
    const double ops = peak_loop(k, kPeakIters);
    const double s = seconds_since(t0);
    if (s > 0.0) best = std::max(best, ops / s);
  }
  return best / clock_hz;
}

HwLimits measure_hw_limits(ThreadPool& pool, size_t probe_bytes) {
  HwLimits h;
  h.threads = pool.size();
  h.read_bytes_per_s = measure_read_bandwidth(pool, probe_bytes);
  h.clock_hz = measure_clock_hz();
  for (PeakKind k : {PeakKind::F32Fma, PeakKind::Bf16Dot, PeakKind::Int8Dot}) {
    h.ops_per_cycle[static_cast<int>(k)] = measure_ops_per_cycle(k, h.clock_hz);
  }
  return h;
}

}  // namespace ferrite::cpu
