#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "sampling/draw.h"
#include "sampling/temperature.h"
#include "sampling/truncation.h"

namespace ferrite::sampling {
namespace {

// Stream tags: each random stage draws from its own stream of the seed.
constexpr uint64_t kDrawStream = 1;
constexpr uint64_t kXtcStream = 2;
constexpr uint64_t kMirostatStream = 3;
// Mirostat v1 estimates the Zipf exponent from this many candidates
// (llama.cpp's common sampler passes 100).
constexpr int32_t kMirostatM = 100;

int32_t resolve_window(int32_t last_n, int32_t context, const char* option) {
  if (last_n != -1) return last_n;
  if (context <= 0) throw InvalidArgument(std::string(option) + " -1 needs the context size, which is unknown here");
  return context;
}

PenaltyParams penalty_params(const SamplerParams& p, const ModelInfo& info) {
  PenaltyParams out;
  out.last_n = resolve_window(p.penalty_last_n, info.n_ctx, "--repeat-last-n");
  out.repeat = p.penalty_repeat;
  out.frequency = p.penalty_freq;
  out.presence = p.penalty_present;
  out.newline_token = info.newline_token;
  out.penalize_newline = p.penalize_nl;
  return out;
}

DryParams dry_params(const SamplerParams& p, const ModelInfo& info) {
  DryParams out;
  out.multiplier = p.dry_multiplier;
  out.base = p.dry_base;
  out.allowed_length = p.dry_allowed_length;
  const int32_t context = info.n_ctx_train > 0 ? info.n_ctx_train : info.n_ctx;
  out.last_n = resolve_window(p.dry_penalty_last_n, context, "--dry-penalty-last-n");
  if (info.n_ctx_train > 0) out.last_n = std::min(out.last_n, info.n_ctx_train);
  return out;
}

DryBreakers dry_breakers(const SamplerParams& p, const ModelInfo& info) {
  const bool active = p.dry_multiplier != 0.0f && p.dry_base >= 1.0f && p.dry_penalty_last_n != 0;
  if (!active) return {};
  const bool any_string = std::any_of(p.dry_sequence_breakers.begin(), p.dry_sequence_breakers.end(),
                                      [](const std::string& s) { return !s.empty(); });
  if (any_string && info.text.pieces.empty()) {
    throw InvalidArgument("DRY sequence breakers need the vocabulary's token pieces (none were given)");
  }
  DryBreakers out = dry_breakers_from_strings(p.dry_sequence_breakers, info.text);
  for (auto& [head, tail] : dry_breakers_from_tokens(info.dry_breaker_tokens)) out.emplace(head, tail);
  return out;
}

const SamplerParams& checked(const SamplerParams& p) {
  validate(p);
  return p;
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  if (logits.empty()) throw InvalidArgument("argmax of no logits");
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return static_cast<int32_t>(best);
}

Sampler::Sampler(const SamplerParams& params, ModelInfo info)
    : params_(checked(params)),
      info_(std::move(info)),
      seed_(resolve_seed(params.seed)),
      penalties_(penalty_params(params_, info_)),
      dry_(dry_params(params_, info_), dry_breakers(params_, info_)),
      draw_rng_(seed_, kDrawStream),
      xtc_rng_(seed_, kXtcStream) {
  if (info_.n_vocab > 0) {
    for (const LogitBias& b : params_.logit_bias) {
      if (b.token >= info_.n_vocab) {
        throw InvalidArgument("--logit-bias: token " + std::to_string(b.token) + " is outside the vocabulary (" +
                              std::to_string(info_.n_vocab) + " tokens)");
      }
    }
  }
  const MirostatParams mp{params_.mirostat_tau, params_.mirostat_eta, kMirostatM};
  if (params_.mirostat == 1) mirostat_v1_ = std::make_unique<MirostatV1>(mp, info_.n_vocab);
  if (params_.mirostat == 2) mirostat_v2_ = std::make_unique<MirostatV2>(mp);
  // Mirostat draws from its own stream; the draw stage is not used then.
  if (params_.mirostat != 0) draw_rng_ = Rng(seed_, kMirostatStream);
  // Only the breakers needed these; the tokenize callback may refer to an
  // object that does not outlive the constructor call.
  info_.text = {};
  info_.dry_breaker_tokens.clear();
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

int32_t Sampler::sample(std::span<const float> logits) {
  const int32_t token = choose(logits);
  accept(token);
  return token;
}

int32_t Sampler::choose(std::span<const float> logits) {
  if (logits.empty()) throw InvalidArgument("sampling from no logits");
  if (!constraint_) return run_chain(logits, false);
  if (constraint_first_) return run_chain(logits, true);
  // Rejection: try unconstrained; on a disallowed token, rerun constrained
  // from the same mirostat state.
  const std::optional<float> mu = mirostat_mu();
  const int32_t token = run_chain(logits, false);
  if (constraint_->allows(token)) return token;
  if (mirostat_v1_) mirostat_v1_->set_mu(*mu);
  if (mirostat_v2_) mirostat_v2_->set_mu(*mu);
  return run_chain(logits, true);
}

void Sampler::require_candidates() const {
  if (cand_.empty()) {
    throw InvalidArgument("no token can be sampled: every logit is -inf or NaN, or disallowed by the constraint");
  }
}

bool Sampler::plain_greedy(bool constrained) const {
  // Every stage but these keeps the most likely token, and a temperature
  // <= 0 then keeps only it: the chain's result is the argmax.
  const bool xtc_active = params_.xtc_probability > 0.0f && params_.xtc_threshold <= kXtcMaxThreshold;
  return !constrained && !mirostat_v1_ && !mirostat_v2_ && params_.logit_bias.empty() && !penalties_.active() &&
         !dry_.active() && !xtc_active && params_.temperature <= 0.0f && !(params_.dynatemp_range > 0.0f) &&
         std::find(params_.samplers.begin(), params_.samplers.end(), Stage::Temperature) != params_.samplers.end();
}

int32_t Sampler::run_chain(std::span<const float> logits, bool constrained) {
  probs_ready_ = false;
  if (plain_greedy(constrained)) {
    // The chain's answer without building the candidate list: the largest
    // logit, the lowest id among equals (logit_before), NaN as -inf.
    int64_t best = -1;
    for (size_t i = 0; i < logits.size(); ++i) {
      const float l = logits[i];
      if (l == -std::numeric_limits<float>::infinity() || std::isnan(l)) continue;
      if (best < 0 || l > logits[static_cast<size_t>(best)]) best = static_cast<int64_t>(i);
    }
    cand_.items.clear();
    if (best >= 0) cand_.items.push_back({static_cast<int32_t>(best), logits[static_cast<size_t>(best)], 0.0f});
    cand_.sorted = true;
    require_candidates();
    return static_cast<int32_t>(best);
  }
  fill_candidates(cand_, logits);
  if (constrained) constraint_->apply(cand_.items);
  apply_logit_bias(cand_, params_.logit_bias);
  drop_impossible(cand_);
  require_candidates();

  size_t idx = 0;
  if (mirostat_v1_ || mirostat_v2_) {
    temperature(cand_, params_.temperature);
    idx = mirostat_v1_ ? mirostat_v1_->choose(cand_, draw_rng_) : mirostat_v2_->choose(cand_, draw_rng_);
  } else {
    for (Stage s : params_.samplers) apply_stage(s);
    require_candidates();
    idx = draw(cand_, draw_rng_);
  }
  return cand_.items[idx].id;
}

void Sampler::apply_stage(Stage stage) {
  const auto min_keep = static_cast<size_t>(params_.min_keep);
  switch (stage) {
    case Stage::Penalties:
      if (penalties_.active()) {
        penalties_.apply(cand_);
        drop_impossible(cand_);
      }
      break;
    case Stage::Dry:
      if (dry_.active()) {
        dry_.apply(cand_);
        drop_impossible(cand_);
      }
      break;
    case Stage::TopNSigma:
      top_n_sigma(cand_, params_.top_n_sigma);
      break;
    case Stage::TopK:
      top_k(cand_, params_.top_k);
      break;
    case Stage::TypicalP:
      typical_p(cand_, params_.typical_p, min_keep);
      break;
    case Stage::TopP:
      top_p(cand_, params_.top_p, min_keep);
      break;
    case Stage::MinP:
      min_p(cand_, params_.min_p, min_keep);
      break;
    case Stage::Xtc:
      xtc(cand_, params_.xtc_probability, params_.xtc_threshold, min_keep, xtc_rng_);
      break;
    case Stage::Temperature:
      dynamic_temperature(cand_, params_.temperature, params_.dynatemp_range, params_.dynatemp_exponent);
      break;
  }
  require_candidates();
}

void Sampler::accept(int32_t token, bool advance_constraint) {
  penalties_.accept(token);
  dry_.accept(token);
  if (advance_constraint && constraint_) constraint_->accept(token);
}

void Sampler::reset() {
  penalties_.reset();
  dry_.reset();
  if (mirostat_v1_) mirostat_v1_->reset();
  if (mirostat_v2_) mirostat_v2_->reset();
  if (constraint_) constraint_->reset();
  draw_rng_ = Rng(seed_, params_.mirostat != 0 ? kMirostatStream : kDrawStream);
  xtc_rng_ = Rng(seed_, kXtcStream);
  cand_.items.clear();
  probs_ready_ = false;
}

void Sampler::set_constraint(std::shared_ptr<Constraint> constraint, bool constraint_first) {
  constraint_ = std::move(constraint);
  constraint_first_ = constraint_first;
}

const Candidates& Sampler::last_candidates() {
  if (!probs_ready_) {
    softmax(cand_);
    probs_ready_ = true;
  }
  return cand_;
}

std::string Sampler::describe() const {
  std::string out = "logits";
  if (constraint_) out += constraint_first_ ? " -> constraint" : " -> [constraint on rejection]";
  if (!params_.logit_bias.empty()) out += " -> logit-bias";
  if (params_.mirostat != 0) return out + " -> temperature -> mirostat-v" + std::to_string(params_.mirostat);
  for (Stage s : params_.samplers) out += std::string(" -> ") + stage_name(s);
  return out + " -> dist";
}

std::optional<float> Sampler::mirostat_mu() const {
  if (mirostat_v1_) return mirostat_v1_->mu();
  if (mirostat_v2_) return mirostat_v2_->mu();
  return std::nullopt;
}

}  // namespace ferrite::sampling
