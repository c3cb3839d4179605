#include "sampling/mirostat.h"

#include <algorithm>
#include <cmath>

#include "sampling/draw.h"
#include "sampling/truncation.h"

namespace ferrite::sampling {
namespace {
// Below this |s - 1| the formula for k is 0/0; its limit is used instead.
constexpr double kTinyEpsilon = 1e-9;

float surprise(float p) { return -std::log2(p); }
}  // namespace

MirostatV1::MirostatV1(const MirostatParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), mu_(2.0f * params.tau) {}

double MirostatV1::top_k_for(const Candidates& c, int32_t m, float mu, int32_t n_vocab) {
  const size_t n = c.size();
  double sum_tb = 0.0, sum_tt = 0.0;
  for (size_t i = 0; i + 1 < n && i + 1 < static_cast<size_t>(std::max(m, 1)); ++i) {
    const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
    const double b = std::log(static_cast<double>(c.items[i].p) / static_cast<double>(c.items[i + 1].p));
    sum_tb += t * b;
    sum_tt += t * t;
  }
  if (sum_tt == 0.0) return 1.0;  // a single candidate
  const double s = sum_tb / sum_tt;
  const double eps = s - 1.0;
  const double nv = std::max<double>(n_vocab, 2.0);
  double base;
  if (std::fabs(eps) < kTinyEpsilon) {
    base = std::pow(2.0, mu) / std::log(nv);  // lim eps->0 of eps / (1 - nv^-eps)
  } else {
    base = eps * std::pow(2.0, mu) / (1.0 - std::pow(nv, -eps));
  }
  return std::pow(base, 1.0 / s);
}

size_t MirostatV1::choose(Candidates& c, Rng& rng) {
  sort_all(c);
  softmax(c);
  const double k = top_k_for(c, params_.m, mu_, n_vocab_);
  // NaN or beyond the list: no cut; below 1: one candidate.
  size_t keep = c.size();
  if (k < 1.0) {
    keep = 1;
  } else if (k < static_cast<double>(c.size())) {
    keep = static_cast<size_t>(k);
  }
  keep_first(c, keep);
  softmax(c);
  const size_t idx = draw(c, rng);
  mu_ -= params_.eta * (surprise(c.items[idx].p) - params_.tau);
  return idx;
}

MirostatV2::MirostatV2(const MirostatParams& params) : params_(params), mu_(2.0f * params.tau) {}

size_t MirostatV2::choose(Candidates& c, Rng& rng) {
  sort_all(c);
  softmax(c);
  size_t keep = 0;
  while (keep < c.size() && !(surprise(c.items[keep].p) > mu_)) ++keep;
  keep_first(c, std::max<size_t>(keep, 1));
  softmax(c);
  const size_t idx = draw(c, rng);
  mu_ -= params_.eta * (surprise(c.items[idx].p) - params_.tau);
  return idx;
}

}  // namespace ferrite::sampling
