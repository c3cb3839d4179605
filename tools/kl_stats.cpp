#include "kl_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ferrite::tools {
namespace {

constexpr double kPercent = 100.0;

// Mean and standard error of the mean from a sum and a sum of squares.
KlStats::Estimate mean_and_error(double sum, double sum2, int64_t n) {
  KlStats::Estimate e;
  if (n == 0) return e;
  const double nd = static_cast<double>(n);
  e.value = sum / nd;
  if (n > 1) e.error = std::sqrt(std::max(0.0, sum2 / nd - e.value * e.value) / (nd - 1.0));
  return e;
}

void line(std::string& out, const char* fmt, double a, double b = 0.0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, fmt, a, b);
  out += buf;
  out += '\n';
}

}  // namespace

void log_softmax(std::span<const float> logits, std::span<float> out) {
  float max = logits[0];
  for (float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  const double log_sum = std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<float>(static_cast<double>(logits[i]) - max - log_sum);
}

KlToken compare_token(std::span<const float> base, std::span<const float> model, int32_t target) {
  KlToken t;
  size_t top_base = 0, top_model = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i] > base[top_base]) top_base = i;
    if (model[i] > model[top_model]) top_model = i;
    if (std::isinf(base[i])) continue;  // p_base = 0 contributes nothing
    t.kld += std::exp(static_cast<double>(base[i])) * (static_cast<double>(base[i]) - model[i]);
  }
  const auto k = static_cast<size_t>(target);
  t.nll_base = -static_cast<double>(base[k]);
  t.nll_model = -static_cast<double>(model[k]);
  t.delta_p = std::exp(static_cast<double>(model[k])) - std::exp(static_cast<double>(base[k]));
  t.same_top = top_base == top_model;
  return t;
}

double percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0.0;
  if (fraction <= 0.0) return sorted.front();
  if (fraction >= 1.0) return sorted.back();
  const double p = fraction * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<size_t>(p);
  const double w = p - static_cast<double>(i);
  return (1.0 - w) * sorted[i] + w * sorted[std::min(i + 1, sorted.size() - 1)];
}

void KlStats::add(const KlToken& t) {
  kld_.push_back(t.kld);
  delta_p_.push_back(t.delta_p);
  sum_nll_model_ += t.nll_model;
  sum_nll_model2_ += t.nll_model * t.nll_model;
  sum_nll_base_ += t.nll_base;
  sum_nll_base2_ += t.nll_base * t.nll_base;
  sum_cross_ += t.nll_model * t.nll_base;
  sum_kld2_ += t.kld * t.kld;
  sum_dp2_ += t.delta_p * t.delta_p;
  sum_dp4_ += t.delta_p * t.delta_p * t.delta_p * t.delta_p;
  n_same_top_ += t.same_top ? 1 : 0;
}

KlStats::Estimate KlStats::ppl_model() const {
  const Estimate m = mean_and_error(sum_nll_model_, sum_nll_model2_, count());
  const double ppl = std::exp(m.value);
  return {ppl, ppl * m.error};
}

KlStats::Estimate KlStats::ppl_base() const {
  const Estimate m = mean_and_error(sum_nll_base_, sum_nll_base2_, count());
  const double ppl = std::exp(m.value);
  return {ppl, ppl * m.error};
}

KlStats::Estimate KlStats::mean_kld() const {
  double sum = 0.0;
  for (double v : kld_) sum += v;
  return mean_and_error(sum, sum_kld2_, count());
}

KlStats::Estimate KlStats::same_top() const {
  const int64_t n = count();
  if (n == 0) return {};
  const double p = static_cast<double>(n_same_top_) / static_cast<double>(n);
  return {p, n > 1 ? std::sqrt(p * (1.0 - p) / static_cast<double>(n - 1)) : 0.0};
}

KlStats::Estimate KlStats::rms_delta_p() const {
  const Estimate ms = mean_and_error(sum_dp2_, sum_dp4_, count());  // mean of dp^2
  const double rms = std::sqrt(ms.value);
  return {rms, rms > 0.0 ? ms.error / (2.0 * rms) : 0.0};
}

KlStats::Estimate KlStats::ppl_ratio() const {
  // ln(PPL(model)/PPL(base)) is the mean of nll_model - nll_base.
  const double d = sum_nll_model_ - sum_nll_base_;
  const double d2 = sum_nll_model2_ - 2.0 * sum_cross_ + sum_nll_base2_;
  const Estimate ln = mean_and_error(d, d2, count());
  const double ratio = std::exp(ln.value);
  return {ratio, ratio * ln.error};
}

double KlStats::kld_percentile(double fraction) const {
  std::vector<double> sorted = kld_;
  std::sort(sorted.begin(), sorted.end());
  return percentile(sorted, fraction);
}

std::string KlStats::report() const {
  std::string out;
  const int64_t n = count();
  const double nd = static_cast<double>(std::max<int64_t>(n, 1));
  const Estimate q = ppl_model(), b = ppl_base(), ratio = ppl_ratio();
  // Correlation of the per-token NLLs.
  const double mq = sum_nll_model_ / nd, mb = sum_nll_base_ / nd;
  const double cov = sum_cross_ / nd - mq * mb;
  const double vq = sum_nll_model2_ / nd - mq * mq, vb = sum_nll_base2_ / nd - mb * mb;
  const double cor = vq > 0.0 && vb > 0.0 ? cov / std::sqrt(vq * vb) : 1.0;
  out += "====== Perplexity statistics ======\n";
  line(out, "Mean PPL(Q)                   : %10.6f ± %10.6f", q.value, q.error);
  line(out, "Mean PPL(base)                : %10.6f ± %10.6f", b.value, b.error);
  line(out, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%", kPercent * cor);
  line(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f", std::log(ratio.value),
       ratio.value > 0.0 ? ratio.error / ratio.value : 0.0);
  line(out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f", ratio.value, ratio.error);
  const double diff_var =
      n > 1 ? std::max(0.0, q.value * q.value * vq + b.value * b.value * vb - 2.0 * q.value * b.value * cov) /
                  (nd - 1.0)
            : 0.0;
  line(out, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f", q.value - b.value, std::sqrt(diff_var));

  std::vector<double> kld = kld_;
  std::sort(kld.begin(), kld.end());
  const Estimate mk = mean_kld();
  out += "\n====== KL divergence statistics ======\n";
  line(out, "Mean    KLD: %10.6f ± %10.6f", mk.value, mk.error);
  line(out, "Maximum KLD: %10.6f", percentile(kld, 1.0));
  line(out, "99.9%%   KLD: %10.6f", percentile(kld, 0.999));
  line(out, "99.0%%   KLD: %10.6f", percentile(kld, 0.99));
  line(out, "90.0%%   KLD: %10.6f", percentile(kld, 0.90));
  line(out, "Median  KLD: %10.6f", percentile(kld, 0.5));
  line(out, "10.0%%   KLD: %10.6f", percentile(kld, 0.10));
  line(out, " 5.0%%   KLD: %10.6f", percentile(kld, 0.05));
  line(out, " 1.0%%   KLD: %10.6f", percentile(kld, 0.01));
  line(out, "Minimum KLD: %10.6f", percentile(kld, 0.0));

  std::vector<double> dp = delta_p_;
  std::sort(dp.begin(), dp.end());
  double sum_dp = 0.0;
  for (double v : dp) sum_dp += v;
  const Estimate mdp = mean_and_error(sum_dp, sum_dp2_, n);
  const Estimate rms = rms_delta_p(), top = same_top();
  out += "\n====== Token probability statistics ======\n";
  line(out, "Mean    Δp: %6.3f ± %5.3f %%", kPercent * mdp.value, kPercent * mdp.error);
  line(out, "Maximum Δp: %6.3f%%", kPercent * percentile(dp, 1.0));
  line(out, "99.9%%   Δp: %6.3f%%", kPercent * percentile(dp, 0.999));
  line(out, "99.0%%   Δp: %6.3f%%", kPercent * percentile(dp, 0.99));
  line(out, "90.0%%   Δp: %6.3f%%", kPercent * percentile(dp, 0.90));
  line(out, "Median  Δp: %6.3f%%", kPercent * percentile(dp, 0.5));
  line(out, "10.0%%   Δp: %6.3f%%", kPercent * percentile(dp, 0.10));
  line(out, " 1.0%%   Δp: %6.3f%%", kPercent * percentile(dp, 0.01));
  line(out, "Minimum Δp: %6.3f%%", kPercent * percentile(dp, 0.0));
  line(out, "RMS Δp    : %6.3f ± %5.3f %%", kPercent * rms.value, kPercent * rms.error);
  line(out, "Same top p: %6.3f ± %5.3f %%", kPercent * top.value, kPercent * top.error);
  return out;
}

}  // namespace ferrite::tools
