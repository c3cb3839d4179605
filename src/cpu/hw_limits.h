// What the machine can do at best, measured at run time, so benchmarks can
// say how close a kernel comes to the hardware's limit:
//   - read bandwidth: a multi-threaded streaming read over a buffer much
//     larger than the last-level cache (the memory-bound limit of decode);
//   - peak arithmetic: cores x clock x operations per cycle of the
//     instruction a matrix product runs on (the compute-bound limit of
//     prompt processing).
//
// Operations per cycle are measured too rather than taken from a table,
// because they differ between microarchitectures of one instruction set
// (Zen 4 splits 512-bit instructions into two 256-bit halves; Intel cores
// with two 512-bit FMA ports do not). The figures below are what a loop of
// independent instructions sustains on one core; for reference, Zen 4 gives
// about 32 flop/cycle for f32 FMA (2 x 256-bit pipes x 8 lanes x 2), 64 for
// bf16 vdpbf16ps and 128 int8 ops/cycle for vpdpbusd (64 MACs).
// The clock is found with a chain of dependent integer additions (one cycle
// each on every x86 core), which also sees turbo and VM throttling that the
// nominal frequency in /proc/cpuinfo does not.
#pragma once

#include <cstddef>
#include <string>

#include "cpu/thread_pool.h"
#include "gguf/tensor_type.h"

namespace ferrite::cpu {

// The instruction class a matrix product of a weight type spends its time in.
enum class PeakKind {
  F32Fma,   // f32 fused multiply-add (F32, F16 weights: converted, then FMA)
  Bf16Dot,  // vdpbf16ps (BF16 weights)
  Int8Dot,  // vpdpbusd / vpmaddubsw on 8-bit activations (quantized weights)
};

std::string peak_kind_name(PeakKind k);  // "f32-fma", "bf16-dot", "int8-dot"

// The class used for weights of `type` at the active instruction-set level.
PeakKind peak_kind_for(TensorType type);

// Bytes per second read by pool.size() threads streaming through a buffer
// of `bytes` (0: 8 x the last-level cache, at least 256 MiB). The best of
// `passes` passes (the first touch of the buffer is not timed).
double measure_read_bandwidth(ThreadPool& pool, size_t bytes = 0, int passes = 5);

// Core clock in Hz (best of a few short dependent-add loops).
double measure_clock_hz();

// Operations (multiply and add count as two) per cycle of one core for the
// instruction class, measured at the active level; 0 when the level lacks it.
double measure_ops_per_cycle(PeakKind k, double clock_hz);

// Measured limits of one machine for a thread count.
struct HwLimits {
  int threads = 1;
  double read_bytes_per_s = 0.0;
  double clock_hz = 0.0;
  double ops_per_cycle[3] = {0.0, 0.0, 0.0};  // indexed by PeakKind

  // threads x clock x ops/cycle, in operations per second.
  double peak_ops_per_s(PeakKind k) const {
    return threads * clock_hz * ops_per_cycle[static_cast<int>(k)];
  }
};

// probe_bytes: the bandwidth probe's buffer (0: the default above).
HwLimits measure_hw_limits(ThreadPool& pool, size_t probe_bytes = 0);

// Per-level loops (hw_limits_avx2.cpp, hw_limits_avx512.cpp): run `iters`
// iterations of independent instructions of class k and return the number
// of operations done (0 when that file cannot do k).
double peak_loop_avx2(PeakKind k, long iters);
double peak_loop_avx512(PeakKind k, long iters);

// Sum of p[0..n) read with the level's vector loads (the bandwidth probe's
// inner loop): one sequential stream, as a matrix row
// group is read.
uint64_t read_sum_avx2(const uint64_t* p, size_t n);
uint64_t read_sum_avx512(const uint64_t* p, size_t n);

}  // namespace ferrite::cpu
