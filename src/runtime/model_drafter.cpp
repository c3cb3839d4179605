#include <cmath>

#include "core/error.h"
#include "runtime/drafter.h"
#include "sampling/sampler.h"

namespace ferrite::runtime {
namespace {

// The softmax probability of logits[best], the largest one.
double top_probability(std::span<const float> logits, int32_t best) {
  const double top = logits[static_cast<size_t>(best)];
  double sum = 0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - top);
  return sum > 0 ? 1.0 / sum : 0.0;
}

}  // namespace

ModelDrafter::ModelDrafter(Context& ctx, DraftModelParams p)
    : ctx_(ctx), seq_(ctx, {.seq = p.seq, .n_cells = p.n_cells, .n_keep = 0, .context_shift = true}), p_(p) {
  if (!(p_.p_min >= 0.0f && p_.p_min <= 1.0f)) {
    throw InvalidArgument("--draft-p-min must be in [0, 1], not " + std::to_string(p_.p_min));
  }
}

std::vector<int32_t> ModelDrafter::draft(std::span<const int32_t> context, int n_max) {
  std::vector<int32_t> out;
  if (n_max <= 0 || context.empty()) return out;
  const int64_t n_vocab = ctx_.n_vocab();
  for (int32_t t : context) {
    if (t < 0 || t >= n_vocab) return out;  // a token the draft model does not have: no draft
  }
  // The cache keeps what it shares with the context (the accepted tokens);
  // the drafts the target rejected go.
  std::span<const float> logits = seq_.prefill(context);
  while (static_cast<int>(out.size()) < n_max) {
    const int32_t best = sampling::argmax(logits);
    if (top_probability(logits, best) < p_.p_min) break;
    out.push_back(best);
    if (static_cast<int>(out.size()) == n_max || seq_.room() < 1) break;
    logits = seq_.feed(best);
  }
  return out;
}

}  // namespace ferrite::runtime
