// The kernel lab: each CPU kernel timed alone — quantized GEMV and GEMM per
// weight type (cpu::matmul), attention (decode over an f16 KV cache, causal
// prefill), RMS norm, RoPE and the SwiGLU/GeGLU activations — with its
// achieved GB/s and Gop/s and its fraction of the hardware limit measured on
// this machine (src/cpu/hw_limits.h): bytes over read bandwidth for
// memory-bound calls, operations over the peak of the kernel's instruction
// class for compute-bound ones (see bench/kernels/report.h).
//
// Built with -DFERRITE_BENCH=ON: `ninja -C build kernels_bench`. Run:
//   build/bench/kernels_bench [--filter REGEX] [-t THREADS] [--k 4096 --n 4096 --m 1,8,64,512]
//                             [--types q4_0,q8_0,...] [--reps N] [-o md|csv]
// (--help lists the rest). bench/README.md has figures measured with it.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "core/error.h"
#include "cpu/features.h"
#include "cpu/hw_limits.h"
#include "cpu/thread_pool.h"
#include "kernels/filter.h"
#include "kernels/lab.h"
#include "kernels/matmul_cases.h"
#include "kernels/op_cases.h"
#include "quant/type_traits.h"

namespace ferrite::kbench {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kFallbackLlcBytes = 32 * kMiB;
constexpr size_t kColdLlcMultiple = 2;
// Bounds that keep a mistyped option from asking for absurd memory or time.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxTokens = 8192;
constexpr int kMaxThreads = 1024;
constexpr int kMaxReps = 1000;
constexpr double kMaxMs = 1e5;

size_t default_cold_bytes() {
  long llc = -1;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return kColdLlcMultiple * (llc > 0 ? static_cast<size_t>(llc) : kFallbackLlcBytes);
}

void check_range(const char* what, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    throw InvalidArgument(std::string(what) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], got " + std::to_string(v));
  }
}

void check_options(const Options& o) {
  if (o.output != "md" && o.output != "csv") throw InvalidArgument("-o: unknown format '" + o.output + "' (md or csv)");
  check_range("-t", o.threads, 1, kMaxThreads);
  check_range("--k", o.k, 1, kMaxDim);
  check_range("--n", o.n, 1, kMaxDim);
  check_range("--reps", o.reps, 1, kMaxReps);
  for (int64_t m : o.m) check_range("--m", m, 1, kMaxTokens);
  for (int64_t d : o.depth) check_range("--depth", d, 1, kMaxDim);
  check_range("--n-head", o.n_head, 1, kMaxDim);
  check_range("--n-head-kv", o.n_head_kv, 1, o.n_head);
  if (o.n_head % o.n_head_kv != 0) throw InvalidArgument("--n-head must be a multiple of --n-head-kv");
  check_range("--head-dim", o.head_dim, 2, kMaxDim);
  if (o.head_dim % 2 != 0) throw InvalidArgument("--head-dim must be even (RoPE rotates pairs)");
  check_range("--n-ff", o.n_ff, 1, kMaxDim);
  if (!(o.min_rep_ms > 0.0 && o.min_rep_ms <= kMaxMs)) throw InvalidArgument("--min-rep-ms must be in (0, 1e5]");
  if (!(o.max_call_ms > 0.0 && o.max_call_ms <= kMaxMs)) throw InvalidArgument("--max-call-ms must be in (0, 1e5]");
  if (!(o.max_op_ms > 0.0 && o.max_op_ms <= kMaxMs)) throw InvalidArgument("--max-op-ms must be in (0, 1e5]");
  Filter check(o.filter);  // throws for a bad pattern
  matmul_types(o.types);  // throws for an unknown or unsupported type
}

void print_limits(const cpu::HwLimits& h, bool csv) {
  std::fprintf(csv ? stderr : stdout,
               "limits (%d thread%s, %s): read %.1f GB/s, clock %.2f GHz, peak f32-fma %.0f / bf16-dot %.0f / "
               "int8-dot %.0f Gop/s\n",
               h.threads, h.threads == 1 ? "" : "s", cpu::isa_summary().c_str(),
               h.read_bytes_per_s / kGiga, h.clock_hz / kGiga, h.peak_ops_per_s(cpu::PeakKind::F32Fma) / kGiga,
               h.peak_ops_per_s(cpu::PeakKind::Bf16Dot) / kGiga, h.peak_ops_per_s(cpu::PeakKind::Int8Dot) / kGiga);
}

int run(Options& opt) {
  if (opt.threads == 0) opt.threads = cpu::ThreadPool::default_threads();
  check_options(opt);
  cpu::apply_isa_env();
  if (!opt.isa.empty()) cpu::set_isa_cap(cpu::parse_isa_cap(opt.isa));
  const bool csv = opt.output == "csv";
  cpu::ThreadPool pool(opt.threads);
  const cpu::HwLimits limits_n = cpu::measure_hw_limits(pool, opt.probe_mib * kMiB);
  cpu::HwLimits limits_1 = limits_n;
  if (opt.threads != 1) {
    cpu::ThreadPool one(1);
    limits_1 = cpu::measure_hw_limits(one, opt.probe_mib * kMiB);
    print_limits(limits_1, csv);
  }
  print_limits(limits_n, csv);
  const size_t cold = opt.hot ? 0 : opt.cold_mib > 0 ? opt.cold_mib * kMiB : default_cold_bytes();
  std::fprintf(csv ? stderr : stdout, "operands cycled through %s; dequantizers: %s\n\n",
               cold == 0 ? "one hot copy" : (std::to_string(cold / kMiB) + " MiB of copies").c_str(),
               quant::dequant_isa());
  std::fputs((csv ? csv_header() : markdown_header()).c_str(), stdout);
  std::fflush(stdout);

  Lab lab(opt, pool, limits_n, limits_1, cold);
  run_matmul(lab);
  run_attention(lab);
  run_row_ops(lab);
  return 0;
}

}  // namespace
}  // namespace ferrite::kbench

int main(int argc, char** argv) {
  using ferrite::kbench::Options;
  Options opt;
  CLI::App app("kernels_bench: each CPU kernel timed alone against the measured hardware limits");
  app.add_option("--filter", opt.filter, "Regex searched in \"op type shape\" (e.g. 'gemv q4', 'attn|rope')");
  app.add_option("-t,--threads", opt.threads, "Threads of matmul and attention (default: all CPUs)");
  app.add_option("--k", opt.k, "Matrix row length");
  app.add_option("--n", opt.n, "Matrix rows");
  app.add_option("--m", opt.m, "Activation rows (tokens), comma list; also the token counts of the other ops")
      ->delimiter(',');
  app.add_option("--types", opt.types, "Weight types, comma list (default: every type matmul supports)")
      ->delimiter(',');
  app.add_option("--depth", opt.depth, "KV cache depths of decode attention, comma list")->delimiter(',');
  app.add_option("--n-head", opt.n_head, "Attention heads");
  app.add_option("--n-head-kv", opt.n_head_kv, "KV heads");
  app.add_option("--head-dim", opt.head_dim, "Head size");
  app.add_option("--n-ff", opt.n_ff, "Feed-forward width (activations)");
  app.add_option("--reps", opt.reps, "Timed repetitions per op");
  app.add_option("--min-rep-ms", opt.min_rep_ms, "Each repetition runs calls for at least this long");
  app.add_option("--max-op-ms", opt.max_op_ms, "Calls slower than this budget allows are timed one by one");
  app.add_option("--max-call-ms", opt.max_call_ms,
                 "matmul: time fewer rows of W (shown in the shape) when a call would take longer");
  app.add_option("--cold-mib", opt.cold_mib, "Operand copies cycled per op, MiB (default: 2 x last-level cache)");
  app.add_flag("--no-repack", [&opt](int64_t) { opt.repack = false; },
               "matmul: plain rows (the runtime repacks Q4_0/Q8_0/F16/BF16 at load; FERRITE_REPACK=0)");
  app.add_flag("--hot", opt.hot, "One copy of the operands (cache-resident after the first call)");
  app.add_option("--probe-mib", opt.probe_mib, "Bandwidth probe buffer, MiB (default: 8 x LLC, >= 256)");
  app.add_option("-o,--output", opt.output, "Output format: md or csv");
  app.add_option("--isa", opt.isa, "Highest instruction-set level (scalar, avx2, avx512, avx512vnni, amx, neon)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return ferrite::kbench::run(opt);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory (reduce --k, --n, --m, --depth or --cold-mib)\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
