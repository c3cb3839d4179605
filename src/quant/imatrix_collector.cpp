#include "quant/imatrix_collector.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "gguf/writer.h"

namespace ferrite::quant {

void ImatrixCollector::add(const std::string& name, int64_t n_mat, int64_t mat, const float* x, int64_t n,
                           int64_t cols) {
  if (n_mat <= 0 || mat < 0 || mat >= n_mat || cols <= 0 || n < 0) {
    throw InvalidArgument("importance matrix of " + name + ": matrix " + std::to_string(mat) + " of " +
                          std::to_string(n_mat) + ", " + std::to_string(cols) + " columns");
  }
  Stats& s = stats_[name];
  if (s.cols == 0) {
    s.cols = cols;
    s.n_mat = n_mat;
    s.sum2.assign(static_cast<size_t>(n_mat * cols), 0.0);
    s.rows.assign(static_cast<size_t>(n_mat), 0);
  } else if (s.cols != cols || s.n_mat != n_mat) {
    throw InvalidArgument("importance matrix of " + name + ": " + std::to_string(cols) + " columns x " +
                          std::to_string(n_mat) + " matrices, earlier " + std::to_string(s.cols) + " x " +
                          std::to_string(s.n_mat));
  }
  double* sum = s.sum2.data() + mat * cols;
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) sum[c] += static_cast<double>(row[c]) * row[c];
  }
  for (int64_t c = 0; c < cols; ++c) {
    if (!std::isfinite(sum[c])) throw ModelError("importance matrix of " + name + ": a non-finite activation");
  }
  s.rows[static_cast<size_t>(mat)] += n;
  s.used = true;
}

void ImatrixCollector::end_pass() {
  for (auto& [name, s] : stats_) {
    if (s.used) ++s.ncall;
    s.used = false;
  }
}

int32_t ImatrixCollector::ncall(const std::string& name) const {
  const auto it = stats_.find(name);
  return it == stats_.end() ? 0 : it->second.ncall;
}

Imatrix ImatrixCollector::to_legacy(int32_t chunk_count, const std::string& dataset,
                                    std::vector<std::string>* skipped) const {
  Imatrix m;
  for (const auto& [name, s] : stats_) {
    bool partial = false;
    for (int64_t r : s.rows) partial = partial || r == 0;
    if (partial || s.ncall == 0) {
      if (skipped != nullptr) skipped->push_back(name);
      continue;
    }
    ImatrixEntry e;
    e.name = name;
    e.ncall = s.ncall;
    e.values.resize(s.sum2.size());
    for (int64_t j = 0; j < s.n_mat; ++j) {
      const double rows = static_cast<double>(s.rows[static_cast<size_t>(j)]);
      for (int64_t c = 0; c < s.cols; ++c) {
        const size_t i = static_cast<size_t>(j * s.cols + c);
        e.values[i] = static_cast<float>(s.sum2[i] / rows * s.ncall);
      }
    }
    m.add(std::move(e));
  }
  m.last_chunk = chunk_count;
  m.dataset = dataset;
  return m;
}

std::vector<uint8_t> ImatrixCollector::gguf_bytes(const std::vector<std::string>& datasets, uint32_t chunk_count,
                                                  uint32_t chunk_size) const {
  gguf::Writer w;
  w.set("general.type", gguf::Value::string("imatrix"));
  std::vector<gguf::Value> names;
  for (const std::string& d : datasets) names.push_back(gguf::Value::string(d));
  w.set("imatrix.datasets", gguf::Value::array(gguf::ValueType::STRING, std::move(names)));
  w.set("imatrix.chunk_count", gguf::Value::u32(chunk_count));
  w.set("imatrix.chunk_size", gguf::Value::u32(chunk_size));
  std::vector<std::vector<uint8_t>> data;
  auto put = [&](const std::vector<float>& v) {
    const auto* b = reinterpret_cast<const uint8_t*>(v.data());
    data.emplace_back(b, b + v.size() * sizeof(float));
  };
  for (const auto& [name, s] : stats_) {
    w.add_tensor(name + ".in_sum2", TensorType::F32, {s.cols, s.n_mat});
    w.add_tensor(name + ".counts", TensorType::F32, {1, s.n_mat});
    put(std::vector<float>(s.sum2.begin(), s.sum2.end()));
    put(std::vector<float>(s.rows.begin(), s.rows.end()));
  }
  return w.to_bytes(data);
}

void ImatrixCollector::write_gguf(const std::string& path, const std::vector<std::string>& datasets,
                                  uint32_t chunk_count, uint32_t chunk_size) const {
  const std::vector<uint8_t> bytes = gguf_bytes(datasets, chunk_count, chunk_size);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw IoError(path, "cannot create: " + std::string(std::strerror(errno)));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool ok = written == bytes.size() && std::fclose(f) == 0;
  if (!ok) throw IoError(path, "write failed");
}

}  // namespace ferrite::quant
