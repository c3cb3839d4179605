// Rows of `ferrite bench` and their output as llama-bench prints them:
// a markdown table (default), JSON or CSV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"

namespace ferrite::tools {

// Facts of one model shown in every row.
struct BenchModel {
  std::string path;
  std::string name;           // "llama 1B Q4_0"
  uint64_t size_bytes = 0;    // all tensors
  uint64_t n_params = 0;      // all tensor elements
  uint64_t bytes_per_token = 0;  // weights read to decode one token
  uint64_t flops_per_token = 0;  // 2 x matrix elements used per token
  std::string peak_kind;      // instruction class of its main matrix type (CPU)
  TensorType main_type = TensorType::F32;  // the type of most of its matrix bytes
};

struct BenchRow {
  const BenchModel* model = nullptr;
  std::string backend;  // the backend of the output layers: "CPU", "CUDA"
  std::string ngl;      // layers on the GPU: "0", a number, "all"
  int threads = 0;
  int n_prompt = 0;
  int n_gen = 0;
  int n_depth = 0;
  std::vector<double> samples_ts;  // tokens per second of each repetition
  double read_bytes_per_s = 0.0;   // the backend's: measured (CPU, this thread count) or the GPU's peak
  double peak_ops_per_s = 0.0;     // for the model's instruction class on that backend (0: unknown)

  std::string test() const;   // "pp512", "tg128", "tg128 @ d512"
  double mean_ts() const;
  double sd_ts() const;       // sample standard deviation (0 for one sample)
  // Tokens per second at the hardware limit: tg by read bandwidth, pp by peak arithmetic.
  double limit_ts() const;
  double limit_fraction() const;  // mean / limit (0 when unknown)
};

enum class BenchFormat { Markdown, Json, Csv };

// "2.05 GiB", "606.53 MiB"; "1.10 B", "292.80 K".
std::string format_size(uint64_t bytes);
std::string format_params(uint64_t n);

std::string markdown_header();
std::string markdown_row(const BenchRow& r);
std::string csv_header();
std::string csv_row(const BenchRow& r);
// The whole JSON array.
std::string json_rows(const std::vector<BenchRow>& rows);

}  // namespace ferrite::tools
