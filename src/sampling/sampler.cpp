#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ferrite::sampling {
namespace {
constexpr double kTwoPow53 = 9007199254740992.0;
}

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw InvalidArgument("argmax of no logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  if (std::isnan(params.temperature)) throw InvalidArgument("temperature is NaN");
  if (!(params.top_p > 0.0f)) throw InvalidArgument("top_p must be in (0, 1]");
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (params_.temperature <= 0.0f) return argmax(logits);
  if (logits.empty()) throw InvalidArgument("sampling from no logits");

  // 1. Candidates sorted by logit, cut to top-k.
  cand_.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) cand_[i] = {static_cast<int32_t>(i), logits[i]};
  size_t k = params_.top_k > 0 ? std::min(static_cast<size_t>(params_.top_k), cand_.size()) : cand_.size();
  auto by_logit = [](const Candidate& a, const Candidate& b) { return a.p > b.p || (a.p == b.p && a.id < b.id); };
  std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(k), cand_.end(), by_logit);
  cand_.resize(k);

  // 2. Softmax of logit / temperature.
  const float max = cand_[0].p;
  double sum = 0.0;
  for (Candidate& c : cand_) {
    c.p = std::exp((c.p - max) / params_.temperature);
    sum += c.p;
  }
  for (Candidate& c : cand_) c.p = static_cast<float>(c.p / sum);

  // 3. Nucleus: the smallest prefix whose probability reaches top_p.
  if (params_.top_p < 1.0f) {
    double acc = 0.0;
    size_t keep = cand_.size();
    for (size_t i = 0; i < cand_.size(); ++i) {
      acc += cand_[i].p;
      if (acc >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    cand_.resize(keep);
  }

  // 4. Draw.
  double total = 0.0;
  for (const Candidate& c : cand_) total += c.p;
  const double u = static_cast<double>(rng_() >> 11) / kTwoPow53 * total;
  double acc = 0.0;
  for (const Candidate& c : cand_) {
    acc += c.p;
    if (u < acc) return c.id;
  }
  return cand_.back().id;
}

}  // namespace ferrite::sampling
