#include "runtime/speculative.h"

#include <algorithm>

#include "core/error.h"

namespace ferrite::runtime {

void validate(const SpeculativeParams& p) {
  if (p.n_max < 0) throw InvalidArgument("--draft-max must not be negative, not " + std::to_string(p.n_max));
  if (p.n_min < 0) throw InvalidArgument("--draft-min must not be negative, not " + std::to_string(p.n_min));
  if (p.n_min > p.n_max) {
    throw InvalidArgument("--draft-min " + std::to_string(p.n_min) + " exceeds --draft-max " + std::to_string(p.n_max));
  }
}

Speculation::Speculation(Drafter& drafter, SpeculativeParams params) : drafter_(drafter), params_(params) {
  validate(params_);
}

int Speculation::draft_budget(const Sequence& seq, const Generation& gen) const {
  // The batch is the pending token and the draft; k drafts give k + 1
  // logits rows, so k + 1 tokens at most can come of it.
  int64_t k = std::min<int64_t>(params_.n_max, seq.room() - 1);
  if (gen.n_left() >= 0) k = std::min<int64_t>(k, gen.n_left() - 1);
  return k < std::max(params_.n_min, 1) ? 0 : static_cast<int>(k);
}

int Speculation::verify(Sequence& seq, Generation& gen, std::span<const float> batch_logits,
                        const std::vector<int32_t>& draft, std::vector<GenerationStep>& out) {
  const size_t nv = batch_logits.size() / (draft.size() + 1);
  const int64_t base = static_cast<int64_t>(seq.cached().size()) - static_cast<int64_t>(draft.size());
  for (size_t i = 0; i < draft.size(); ++i) {
    GenerationStep s = gen.next(batch_logits.subspan(i * nv, nv));
    const bool go_on = s.needs_eval();
    const int32_t token = s.token;
    out.push_back(std::move(s));
    const int accepted = static_cast<int>(i) + (token == draft[i] ? 1 : 0);
    if (!go_on) {
      seq.truncate(base + static_cast<int64_t>(i));  // the ending token is never evaluated
      return accepted;
    }
    if (token != draft[i]) {
      seq.truncate(base + static_cast<int64_t>(i));
      pending_ = token;  // evaluated first in the next round
      return accepted;
    }
  }
  return static_cast<int>(draft.size());
}

std::vector<GenerationStep> Speculation::step(Sequence& seq, Generation& gen, std::span<const float>& logits) {
  std::vector<GenerationStep> out;
  if (!pending_) {
    out.push_back(gen.next(logits));
    if (!out.back().needs_eval()) return out;
    pending_ = out.back().token;
  }
  const int32_t token = *pending_;
  pending_.reset();
  if (seq.full()) {
    if (!seq.context_shift()) {
      out.push_back(gen.end(FinishReason::kContextFull));
      return out;
    }
    seq.shift();
  }
  std::vector<int32_t> draft;
  if (const int budget = draft_budget(seq, gen); budget > 0) {
    context_.assign(seq.cached().begin(), seq.cached().end());
    context_.push_back(token);
    draft = drafter_.draft(context_, budget);
    if (static_cast<int>(draft.size()) > budget) draft.resize(static_cast<size_t>(budget));
    if (static_cast<int>(draft.size()) < params_.n_min) draft.clear();
  }
  std::vector<int32_t> batch{token};
  batch.insert(batch.end(), draft.begin(), draft.end());
  std::span<const float> rows = seq.feed_all(batch);
  if (draft.empty()) {
    logits = rows;
    return out;
  }
  ++stats_.n_rounds;
  stats_.n_drafted += static_cast<int64_t>(draft.size());
  const int accepted = verify(seq, gen, rows, draft, out);
  stats_.n_accepted += accepted;
  if (accepted == static_cast<int>(draft.size()) && !gen.done()) {
    const size_t nv = rows.size() / batch.size();
    logits = rows.subspan(draft.size() * nv, nv);
  }
  return out;
}

std::vector<GenerationStep> generation_steps(Sequence& seq, Generation& gen, std::span<const float>& logits,
                                             Speculation* spec) {
  if (spec != nullptr) return spec->step(seq, gen, logits);
  std::vector<GenerationStep> out;
  out.push_back(seq.step(gen, logits));
  return out;
}

}  // namespace ferrite::runtime
