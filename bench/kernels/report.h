// One row of the kernel lab and its place under the roofline: a call cannot
// take less than max(bytes / read bandwidth, operations / peak arithmetic),
// both measured on this machine for the thread count the kernel runs on
// (src/cpu/hw_limits.h). The row's fraction of the limit is that bound over
// the measured median; "bound" names the larger term ("mem" for streaming
// kernels such as GEMV and decode attention, the instruction class for
// compute-bound ones such as GEMM).
#pragma once

#include <cstdio>
#include <string>

#include "cpu/hw_limits.h"
#include "timing.h"

namespace ferrite::kbench {

constexpr double kGiga = 1e9;
constexpr double kMicro = 1e-6;

struct Row {
  std::string op;      // "matmul", "attn_decode", "rms_norm", ...
  std::string type;    // weight or data type ("q4_K", "f16", "f32")
  std::string shape;   // "m=1 n=4096 k=4096"
  std::string kernel;  // the path taken ("int8-dot", "dequant(ref)+f32-fma", ...)
  int threads = 1;
  Timing time;
  double bytes = 0.0;  // bytes one call must move at least (read + written)
  double ops = 0.0;    // arithmetic operations of one call (multiply and add count two)
  double read_bytes_per_s = 0.0;  // measured limit for `threads`
  double peak_ops_per_s = 0.0;    // measured limit of the kernel's instruction class (0: unknown)
  std::string peak_name;          // that class ("int8-dot")

  double gb_per_s() const { return bytes / time.median_s / kGiga; }
  double gop_per_s() const { return ops / time.median_s / kGiga; }
  double mem_bound_s() const { return read_bytes_per_s > 0.0 ? bytes / read_bytes_per_s : 0.0; }
  double ops_bound_s() const { return peak_ops_per_s > 0.0 ? ops / peak_ops_per_s : 0.0; }
  bool memory_bound() const { return mem_bound_s() >= ops_bound_s(); }
  std::string bound() const { return memory_bound() ? "mem" : peak_name; }
  double limit_fraction() const {
    const double best = std::max(mem_bound_s(), ops_bound_s());
    return time.median_s > 0.0 ? best / time.median_s : 0.0;
  }
  // (max - min) / median of the repetitions' per-call times, in percent.
  double spread_pct() const { return time.median_s > 0.0 ? 100.0 * (time.max_s - time.min_s) / time.median_s : 0.0; }
};

// "12.3 us", "4.56 ms"
inline std::string format_time(double s) {
  char buf[32];
  if (s < 1e-3) {
    std::snprintf(buf, sizeof(buf), "%.2f us", s / kMicro);
  } else if (s < 1.0) {
    std::snprintf(buf, sizeof(buf), "%.3f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3f s", s);
  }
  return buf;
}

inline std::string markdown_header() {
  return "| op | type | shape | kernel | threads | time/call (median) | spread | GB/s | Gop/s | bound | % of limit |\n"
         "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n";
}

inline std::string markdown_row(const Row& r) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "| %s | %s | %s | %s | %d | %s | %.1f%% | %.2f | %.2f | %s | %.1f%% |\n",
                r.op.c_str(), r.type.c_str(), r.shape.c_str(), r.kernel.c_str(), r.threads,
                format_time(r.time.median_s).c_str(), r.spread_pct(), r.gb_per_s(), r.gop_per_s(), r.bound().c_str(),
                100.0 * r.limit_fraction());
  return buf;
}

inline std::string csv_header() {
  return "op,type,shape,kernel,threads,median_us,min_us,max_us,calls_per_rep,bytes,ops,gb_per_s,gop_per_s,bound,"
         "limit_fraction\n";
}

inline std::string csv_row(const Row& r) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), "%s,%s,%s,%s,%d,%.3f,%.3f,%.3f,%lld,%.0f,%.0f,%.3f,%.3f,%s,%.4f\n", r.op.c_str(),
                r.type.c_str(), r.shape.c_str(), r.kernel.c_str(), r.threads, r.time.median_s / kMicro,
                r.time.min_s / kMicro, r.time.max_s / kMicro, static_cast<long long>(r.time.calls_per_rep), r.bytes,
                r.ops, r.gb_per_s(), r.gop_per_s(), r.bound().c_str(), r.limit_fraction());
  return buf;
}

}  // namespace ferrite::kbench
