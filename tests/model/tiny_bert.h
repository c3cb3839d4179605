// A hand-made tiny bert GGUF (random F32 weights, written with gguf::Writer)
// and a plain double-precision reference forward written from bert's
// definition, for testing the bert architecture and pooling without a
// llama.cpp golden. GELU in the reference is llama.cpp's definition (the
// tanh approximation evaluated at the f16-rounded input, result rounded to
// f16), computed here in double.
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

#include "core/fp16.h"
#include "gguf/writer.h"

namespace ferrite::test {

class TinyBert {
 public:
  static constexpr int64_t kEmbd = 16, kHead = 2, kFf = 32, kLayer = 2, kVocab = 50, kCtx = 32, kTypes = 2;
  static constexpr double kEps = 1e-12;

  // Writes the model into a fresh temporary folder (removed by the destructor).
  explicit TinyBert(uint32_t pooling_type, uint32_t seed = 7) {
    std::string pattern = (std::filesystem::temp_directory_path() / "ferrite-bert-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    path_ = dir_ / "tiny-bert.gguf";
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    gguf::Writer w;
    w.set("general.architecture", gguf::Value::string("bert"));
    w.set("bert.context_length", gguf::Value::u32(kCtx));
    w.set("bert.embedding_length", gguf::Value::u32(kEmbd));
    w.set("bert.feed_forward_length", gguf::Value::u32(kFf));
    w.set("bert.block_count", gguf::Value::u32(kLayer));
    w.set("bert.attention.head_count", gguf::Value::u32(kHead));
    w.set("bert.attention.layer_norm_epsilon", gguf::Value::f32(static_cast<float>(kEps)));
    w.set("bert.attention.causal", gguf::Value::boolean(false));
    w.set("bert.pooling_type", gguf::Value::u32(pooling_type));
    auto add = [&](const std::string& name, std::vector<int64_t> ne, float offset = 0.0f) {
      int64_t n = 1;
      for (int64_t d : ne) n *= d;
      std::vector<float>& t = tensors_[name];
      t.resize(static_cast<size_t>(n));
      for (float& v : t) v = offset + normal(rng);
      order_.push_back(name);
      w.add_tensor(name, TensorType::F32, ne);
    };
    add("token_embd.weight", {kEmbd, kVocab});
    add("token_types.weight", {kEmbd, kTypes});
    add("position_embd.weight", {kEmbd, kCtx});
    add("token_embd_norm.weight", {kEmbd}, 1.0f);
    add("token_embd_norm.bias", {kEmbd});
    for (int64_t il = 0; il < kLayer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        add(p + m + ".weight", {kEmbd, kEmbd});
        add(p + m + ".bias", {kEmbd});
      }
      add(p + "attn_output_norm.weight", {kEmbd}, 1.0f);
      add(p + "attn_output_norm.bias", {kEmbd});
      add(p + "ffn_up.weight", {kEmbd, kFf});
      add(p + "ffn_up.bias", {kFf});
      add(p + "ffn_down.weight", {kFf, kEmbd});
      add(p + "ffn_down.bias", {kEmbd});
      add(p + "layer_output_norm.weight", {kEmbd}, 1.0f);
      add(p + "layer_output_norm.bias", {kEmbd});
    }
    w.open(path_.string());
    for (const std::string& name : order_) {
      const std::vector<float>& t = tensors_.at(name);
      w.write_tensor_data(t.data(), t.size() * sizeof(float));
    }
    w.close();
  }
  ~TinyBert() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  TinyBert(const TinyBert&) = delete;
  TinyBert& operator=(const TinyBert&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Final hidden states [n, kEmbd] of one sequence (positions 0..n-1).
  std::vector<double> reference(const std::vector<int32_t>& tokens) const {
    const int64_t n = static_cast<int64_t>(tokens.size());
    std::vector<double> x(static_cast<size_t>(n * kEmbd));
    const auto& tok = t("token_embd.weight");
    const auto& typ = t("token_types.weight");
    const auto& pos = t("position_embd.weight");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t d = 0; d < kEmbd; ++d) {
        x[i * kEmbd + d] = double{tok[tokens[i] * kEmbd + d]} + typ[d] + pos[i * kEmbd + d];
      }
    }
    layer_norm(x, n, "token_embd_norm");
    for (int64_t il = 0; il < kLayer; ++il) {
      const std::string p = "blk." + std::to_string(il) + ".";
      const std::vector<double> q = linear(x, n, p + "attn_q", kEmbd, kEmbd);
      const std::vector<double> k = linear(x, n, p + "attn_k", kEmbd, kEmbd);
      const std::vector<double> v = linear(x, n, p + "attn_v", kEmbd, kEmbd);
      const int64_t hd = kEmbd / kHead;
      std::vector<double> a(x.size(), 0.0);
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t h = 0; h < kHead; ++h) {
          std::vector<double> s(static_cast<size_t>(n));
          double max = -INFINITY, sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0;
            for (int64_t d = 0; d < hd; ++d) dot += q[i * kEmbd + h * hd + d] * k[j * kEmbd + h * hd + d];
            s[j] = dot / std::sqrt(static_cast<double>(hd));
            max = std::max(max, s[j]);
          }
          for (double& e : s) sum += (e = std::exp(e - max));
          for (int64_t j = 0; j < n; ++j) {
            for (int64_t d = 0; d < hd; ++d) a[i * kEmbd + h * hd + d] += s[j] / sum * v[j * kEmbd + h * hd + d];
          }
        }
      }
      const std::vector<double> o = linear(a, n, p + "attn_output", kEmbd, kEmbd);
      for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
      layer_norm(x, n, p + "attn_output_norm");
      std::vector<double> up = linear(x, n, p + "ffn_up", kEmbd, kFf);
      for (double& e : up) e = gelu_f16(e);
      const std::vector<double> down = linear(up, n, p + "ffn_down", kFf, kEmbd);
      for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
      layer_norm(x, n, p + "layer_output_norm");
    }
    return x;
  }

 private:
  const std::vector<float>& t(const std::string& name) const { return tensors_.at(name); }

  // y [n, n_out] = x [n, n_in] W^T + b, W stored [n_out rows of n_in].
  std::vector<double> linear(const std::vector<double>& x, int64_t n, const std::string& name, int64_t n_in,
                             int64_t n_out) const {
    const auto& w = t(name + ".weight");
    const auto& b = t(name + ".bias");
    std::vector<double> y(static_cast<size_t>(n * n_out));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t o = 0; o < n_out; ++o) {
        double acc = b[o];
        for (int64_t c = 0; c < n_in; ++c) acc += x[i * n_in + c] * w[o * n_in + c];
        y[i * n_out + o] = acc;
      }
    }
    return y;
  }

  void layer_norm(std::vector<double>& x, int64_t n, const std::string& name) const {
    const auto& w = t(name + ".weight");
    const auto& b = t(name + ".bias");
    for (int64_t i = 0; i < n; ++i) {
      double mean = 0, var = 0;
      for (int64_t d = 0; d < kEmbd; ++d) mean += x[i * kEmbd + d];
      mean /= kEmbd;
      for (int64_t d = 0; d < kEmbd; ++d) var += (x[i * kEmbd + d] - mean) * (x[i * kEmbd + d] - mean);
      var /= kEmbd;
      for (int64_t d = 0; d < kEmbd; ++d) {
        x[i * kEmbd + d] = (x[i * kEmbd + d] - mean) / std::sqrt(var + kEps) * w[d] + b[d];
      }
    }
  }

  static double gelu_f16(double v) {
    if (v <= -10.0) return 0.0;
    if (v >= 10.0) return v;
    const double x = fp16_to_fp32(fp32_to_fp16(static_cast<float>(v)));
    const double g = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * x * (1.0 + 0.044715 * x * x)));
    return fp16_to_fp32(fp32_to_fp16(static_cast<float>(g)));
  }

  std::filesystem::path dir_, path_;
  std::map<std::string, std::vector<float>> tensors_;
  std::vector<std::string> order_;
};

}  // namespace ferrite::test
