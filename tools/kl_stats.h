// Statistics of `ferrite perplexity --kl-divergence`: per scored token, the
// base model's log-probabilities (from the base file) against this model's,
// summarized as llama-perplexity summarizes them (PPL ratio, KL divergence
// percentiles, probability of the right token, same top token).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ferrite::tools {

// Natural-log softmax of `logits` into `out` (same size), in double.
void log_softmax(std::span<const float> logits, std::span<float> out);

// One token's comparison. `base` and `model` are log-probabilities.
struct KlToken {
  double kld = 0.0;       // sum_i p_base(i) * (log p_base(i) - log p_model(i))
  double nll_base = 0.0;  // -log p_base(target)
  double nll_model = 0.0; // -log p_model(target)
  double delta_p = 0.0;   // p_model(target) - p_base(target)
  bool same_top = false;  // both argmaxes equal
};
KlToken compare_token(std::span<const float> base, std::span<const float> model, int32_t target);

// Value at `fraction` of sorted `v` with linear interpolation between
// neighbours (fraction 0: the minimum, 1: the maximum).
double percentile(const std::vector<double>& sorted, double fraction);

class KlStats {
 public:
  void add(const KlToken& t);
  int64_t count() const { return static_cast<int64_t>(kld_.size()); }

  struct Estimate {
    double value = 0.0;
    double error = 0.0;
  };
  Estimate ppl_model() const;
  Estimate ppl_base() const;
  Estimate mean_kld() const;
  Estimate same_top() const;   // fraction in [0, 1]
  Estimate rms_delta_p() const;
  Estimate ppl_ratio() const;  // PPL(model) / PPL(base)
  double kld_percentile(double fraction) const;

  // llama-perplexity's closing report.
  std::string report() const;

 private:
  std::vector<double> kld_, delta_p_;
  double sum_nll_model_ = 0, sum_nll_model2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_cross_ = 0;
  double sum_kld2_ = 0, sum_dp2_ = 0, sum_dp4_ = 0;
  int64_t n_same_top_ = 0;
};

}  // namespace ferrite::tools
