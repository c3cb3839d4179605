#include "sampling/penalties.h"

namespace ferrite::sampling {

void apply_logit_bias(Candidates& c, std::span<const LogitBias> biases) {
  if (biases.empty() || c.empty()) return;
  auto& v = c.items;
  for (const LogitBias& b : biases) {
    // Candidates straight from the logits have id == index.
    const auto i = static_cast<size_t>(b.token);
    if (b.token >= 0 && i < v.size() && v[i].id == b.token) {
      v[i].logit += b.bias;
      continue;
    }
    for (Candidate& x : v) {
      if (x.id == b.token) x.logit += b.bias;
    }
  }
  c.sorted = false;
}

Penalties::Penalties(const PenaltyParams& params)
    : params_(params), window_(params.last_n > 0 ? static_cast<size_t>(params.last_n) : 0) {}

bool Penalties::active() const {
  return params_.last_n > 0 &&
         !(params_.repeat == 1.0f && params_.frequency == 0.0f && params_.presence == 0.0f);
}

void Penalties::accept(int32_t token) {
  if (params_.last_n <= 0) return;
  ++counts_[token];
  int32_t old = 0;
  if (window_.push(token, &old)) {
    auto it = counts_.find(old);
    if (--it->second == 0) counts_.erase(it);
  }
}

int Penalties::count(int32_t token) const {
  auto it = counts_.find(token);
  return it == counts_.end() ? 0 : it->second;
}

void Penalties::apply(Candidates& c) const {
  if (!active() || counts_.empty()) return;
  for_each_listed(c, counts_, [&](Candidate& x, int n) {
    if (!params_.penalize_newline && x.id == params_.newline_token) return;
    if (x.logit <= 0.0f) {
      x.logit *= params_.repeat;
    } else {
      x.logit /= params_.repeat;
    }
    x.logit -= static_cast<float>(n) * params_.frequency + params_.presence;
  });
  c.sorted = false;
}

void Penalties::reset() {
  window_.clear();
  counts_.clear();
}

}  // namespace ferrite::sampling
