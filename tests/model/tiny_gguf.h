// A hand-made tiny GGUF with random F32 weights, written with gguf::Writer
// into a fresh temporary folder (removed by the destructor). The reference
// forwards (ref_qwen3.h, ref_gemma.h) read the same weights back from here.
#pragma once

#include <stdlib.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace ferrite::test {

class TinyGguf {
 public:
  explicit TinyGguf(const std::string& arch, uint32_t seed) : arch_(arch), rng_(seed) {
    std::string pattern = (std::filesystem::temp_directory_path() / "ferrite-ref-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    path_ = dir_ / ("tiny-" + arch + ".gguf");
    writer_.set("general.architecture", gguf::Value::string(arch));
  }
  ~TinyGguf() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TinyGguf(const TinyGguf&) = delete;
  TinyGguf& operator=(const TinyGguf&) = delete;

  // "<arch>.<suffix>" metadata.
  void set_u32(const std::string& suffix, uint32_t v) { writer_.set(arch_ + "." + suffix, gguf::Value::u32(v)); }
  void set_f32(const std::string& suffix, float v) { writer_.set(arch_ + "." + suffix, gguf::Value::f32(v)); }
  void set_bool(const std::string& suffix, bool v) { writer_.set(arch_ + "." + suffix, gguf::Value::boolean(v)); }
  void set_str(const std::string& suffix, const std::string& v) {
    writer_.set(arch_ + "." + suffix, gguf::Value::string(v));
  }

  // A tensor of shape ne (innermost first) filled with offset + N(0, stddev).
  void add(const std::string& name, const std::vector<int64_t>& ne, float stddev, float offset = 0.0f) {
    int64_t n = 1;
    for (int64_t d : ne) n *= d;
    std::normal_distribution<float> normal(0.0f, stddev);
    std::vector<float>& t = tensors_[name];
    t.resize(static_cast<size_t>(n));
    for (float& v : t) v = offset + normal(rng_);
    order_.push_back(name);
    writer_.add_tensor(name, TensorType::F32, ne);
  }

  // A projection [n_out rows of n_in] scaled by 1/sqrt(n_in), so that
  // activations stay of order one through the layers.
  void add_linear(const std::string& name, int64_t n_in, int64_t n_out) {
    add(name, {n_in, n_out}, 1.0f / std::sqrt(static_cast<float>(n_in)));
  }

  // A norm weight near one.
  void add_norm(const std::string& name, int64_t n) { add(name, {n}, 0.1f, 1.0f); }

  // Writes the file; call once, after every set/add.
  void write() {
    writer_.open(path_.string());
    for (const std::string& name : order_) {
      const std::vector<float>& t = tensors_.at(name);
      writer_.write_tensor_data(t.data(), t.size() * sizeof(float));
    }
    writer_.close();
  }

  const std::filesystem::path& path() const { return path_; }
  // Metadata beyond "<arch>." keys (a vocabulary's tokenizer.* keys).
  gguf::Writer& writer() { return writer_; }
  // A tensor's values, to change before write().
  std::vector<float>& values(const std::string& name) { return tensors_.at(name); }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::vector<float>& t(const std::string& name) const { return tensors_.at(name); }

 private:
  std::string arch_;
  std::mt19937 rng_;
  gguf::Writer writer_;
  std::filesystem::path dir_, path_;
  std::map<std::string, std::vector<float>> tensors_;
  std::vector<std::string> order_;
};

}  // namespace ferrite::test
