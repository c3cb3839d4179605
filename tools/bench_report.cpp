#include "bench_report.h"

#include <cmath>
#include <cstdio>
#include <numeric>

#include <nlohmann/json.hpp>

namespace ferrite::tools {
namespace {

constexpr double kKiB = 1024.0;
constexpr double kPercent = 100.0;

std::string printf_string(const char* fmt, double a, double b = 0.0) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, a, b);
  return buf;
}

std::string pad_left(const std::string& s, size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }
std::string pad_right(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }

// Column widths as llama-bench prints them.
constexpr size_t kModelW = 30, kSizeW = 10, kParamsW = 10, kBackendW = 10, kNglW = 3, kThreadsW = 7, kTestW = 13,
                 kTsW = 20, kLimitW = 7;

std::string limit_cell(const BenchRow& r) {
  const double f = r.limit_fraction();
  return f > 0.0 ? printf_string("%.0f%%", f * kPercent) : "-";
}

std::string csv_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string BenchRow::test() const {
  std::string t = n_prompt > 0 ? "pp" + std::to_string(n_prompt) : "tg" + std::to_string(n_gen);
  if (n_depth > 0) t += " @ d" + std::to_string(n_depth);
  return t;
}

double BenchRow::mean_ts() const {
  if (samples_ts.empty()) return 0.0;
  return std::accumulate(samples_ts.begin(), samples_ts.end(), 0.0) / static_cast<double>(samples_ts.size());
}

double BenchRow::sd_ts() const {
  if (samples_ts.size() < 2) return 0.0;
  const double m = mean_ts();
  double ss = 0.0;
  for (double v : samples_ts) ss += (v - m) * (v - m);
  return std::sqrt(ss / static_cast<double>(samples_ts.size() - 1));
}

double BenchRow::limit_ts() const {
  if (model == nullptr) return 0.0;
  if (n_prompt > 0) {
    return model->flops_per_token > 0 ? peak_ops_per_s / static_cast<double>(model->flops_per_token) : 0.0;
  }
  return model->bytes_per_token > 0 ? read_bytes_per_s / static_cast<double>(model->bytes_per_token) : 0.0;
}

double BenchRow::limit_fraction() const {
  const double l = limit_ts();
  return l > 0.0 ? mean_ts() / l : 0.0;
}

std::string format_size(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= kKiB * kKiB * kKiB) return printf_string("%.2f GiB", b / (kKiB * kKiB * kKiB));
  if (b >= kKiB * kKiB) return printf_string("%.2f MiB", b / (kKiB * kKiB));
  return printf_string("%.2f KiB", b / kKiB);
}

std::string format_params(uint64_t n) {
  const double v = static_cast<double>(n);
  if (v >= 1e9) return printf_string("%.2f B", v / 1e9);
  if (v >= 1e6) return printf_string("%.2f M", v / 1e6);
  return printf_string("%.2f K", v / 1e3);
}

std::string markdown_header() {
  std::string h = "| " + pad_right("model", kModelW) + " | " + pad_left("size", kSizeW) + " | " +
                  pad_left("params", kParamsW) + " | " + pad_right("backend", kBackendW) + " | " +
                  pad_left("ngl", kNglW) + " | " + pad_left("threads", kThreadsW) + " | " + pad_left("test", kTestW) + " | " + pad_left("t/s", kTsW) +
                  " | " + pad_left("% limit", kLimitW) + " |\n";
  h += "| " + std::string(kModelW, '-') + " | " + std::string(kSizeW - 1, '-') + ": | " +
       std::string(kParamsW - 1, '-') + ": | " + std::string(kBackendW, '-') + " | " +
       std::string(kNglW - 1, '-') + ": | " + std::string(kThreadsW - 1, '-') + ": | " + std::string(kTestW - 1, '-') + ": | " +
       std::string(kTsW - 1, '-') + ": | " + std::string(kLimitW - 1, '-') + ": |\n";
  return h;
}

std::string markdown_row(const BenchRow& r) {
  return "| " + pad_right(r.model->name, kModelW) + " | " + pad_left(format_size(r.model->size_bytes), kSizeW) + " | " +
         pad_left(format_params(r.model->n_params), kParamsW) + " | " + pad_right(r.backend, kBackendW) + " | " +
         pad_left(r.ngl, kNglW) + " | " + pad_left(std::to_string(r.threads), kThreadsW) + " | " + pad_left(r.test(), kTestW) + " | " +
         pad_left(printf_string("%.2f ± %.2f", r.mean_ts(), r.sd_ts()), kTsW) + " | " +
         pad_left(limit_cell(r), kLimitW) + " |\n";
}

std::string csv_header() {
  return "model_filename,model_type,model_size,model_n_params,backend,n_gpu_layers,n_threads,n_prompt,n_gen,n_depth,test,"
         "avg_ts,stddev_ts,limit_ts,limit_fraction,read_bytes_per_s,peak_ops_per_s,peak_kind\n";
}

std::string csv_row(const BenchRow& r) {
  const BenchModel& m = *r.model;
  return csv_quote(m.path) + "," + csv_quote(m.name) + "," + std::to_string(m.size_bytes) + "," +
         std::to_string(m.n_params) + "," + csv_quote(r.backend) + "," + csv_quote(r.ngl) + "," +
         std::to_string(r.threads) + "," +
         std::to_string(r.n_prompt) + "," + std::to_string(r.n_gen) + "," + std::to_string(r.n_depth) + "," +
         csv_quote(r.test()) + "," + printf_string("%.6f", r.mean_ts()) + "," + printf_string("%.6f", r.sd_ts()) +
         "," + printf_string("%.6f", r.limit_ts()) + "," + printf_string("%.6f", r.limit_fraction()) + "," +
         printf_string("%.0f", r.read_bytes_per_s) + "," + printf_string("%.0f", r.peak_ops_per_s) + "," +
         csv_quote(m.peak_kind) + "\n";
}

std::string json_rows(const std::vector<BenchRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    const BenchModel& m = *r.model;
    out.push_back({{"model_filename", m.path},
                   {"model_type", m.name},
                   {"model_size", m.size_bytes},
                   {"model_n_params", m.n_params},
                   {"backend", r.backend},
                   {"n_gpu_layers", r.ngl},
                   {"n_threads", r.threads},
                   {"n_prompt", r.n_prompt},
                   {"n_gen", r.n_gen},
                   {"n_depth", r.n_depth},
                   {"test", r.test()},
                   {"avg_ts", r.mean_ts()},
                   {"stddev_ts", r.sd_ts()},
                   {"samples_ts", r.samples_ts},
                   {"limit_ts", r.limit_ts()},
                   {"limit_fraction", r.limit_fraction()},
                   {"bytes_per_token", m.bytes_per_token},
                   {"flops_per_token", m.flops_per_token},
                   {"read_bytes_per_s", r.read_bytes_per_s},
                   {"peak_ops_per_s", r.peak_ops_per_s},
                   {"peak_kind", m.peak_kind}});
  }
  return out.dump(2) + "\n";
}

}  // namespace ferrite::tools
