// Collecting an importance matrix as llama.cpp's llama-imatrix does: for
// every weight matrix, the sum over the token rows it multiplied of each
// input column's square (per expert for 3-D expert tensors), the number of
// rows counted, and the number of forward passes that used it (ncall).
// Written in both of llama.cpp's formats:
//   legacy .dat (imatrix.h): value = sum / rows x ncall, so that the reader's
//     value / ncall is the mean square; a weight one of whose experts saw no
//     row is left out (llama.cpp skips such partial entries)
//   GGUF: general.type = "imatrix", imatrix.datasets (strings),
//     imatrix.chunk_count, imatrix.chunk_size (u32), and per weight two f32
//     tensors: "<name>.in_sum2" [cols, n_mat] (the sums) and "<name>.counts"
//     [1, n_mat] (the rows); the reader divides, and a matrix with no rows
//     gets importance 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "quant/imatrix.h"

namespace ferrite::quant {

class ImatrixCollector {
 public:
  // Adds `n` rows of `cols` inputs multiplied by matrix `mat` of the `n_mat`
  // matrices of weight `name` (experts; 1 for a plain matrix). Throws
  // InvalidArgument when the weight was seen before with other sizes, and
  // ModelError when a sum stops being finite.
  void add(const std::string& name, int64_t n_mat, int64_t mat, const float* x, int64_t n, int64_t cols);
  // Ends a forward pass: each weight used since the last call counts one call.
  void end_pass();

  size_t size() const { return stats_.size(); }
  // Passes counted for `name` (0 when never seen).
  int32_t ncall(const std::string& name) const;

  // The legacy form; `skipped` (optional) receives the partial entries left out.
  Imatrix to_legacy(int32_t chunk_count, const std::string& dataset,
                    std::vector<std::string>* skipped = nullptr) const;
  // The GGUF form, as a file image.
  std::vector<uint8_t> gguf_bytes(const std::vector<std::string>& datasets, uint32_t chunk_count,
                                  uint32_t chunk_size) const;
  void write_gguf(const std::string& path, const std::vector<std::string>& datasets, uint32_t chunk_count,
                  uint32_t chunk_size) const;

 private:
  struct Stats {
    int64_t cols = 0, n_mat = 0;
    std::vector<double> sum2;     // [n_mat * cols]
    std::vector<int64_t> rows;    // [n_mat]
    int32_t ncall = 0;
    bool used = false;            // in the current pass
  };
  std::map<std::string, Stats> stats_;
};

}  // namespace ferrite::quant
