#include "runtime/sequence.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace ferrite::runtime {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> wanted) {
  if (wanted.empty()) return 0;
  const size_t limit = std::min(cached.size(), wanted.size() - 1);
  size_t n = 0;
  while (n < limit && cached[n] == wanted[n]) ++n;
  return static_cast<int64_t>(n);
}

int64_t shift_context(Context& ctx, int seq, std::vector<int32_t>& tokens, int64_t n_keep) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t keep = std::clamp<int64_t>(n_keep, 0, n);
  const int64_t n_discard = (n - keep) / 2;
  if (n_discard <= 0) return 0;
  ctx.remove_range(seq, static_cast<int32_t>(keep), static_cast<int32_t>(keep + n_discard));
  ctx.shift_sequence(seq, static_cast<int32_t>(keep + n_discard), -1, static_cast<int32_t>(-n_discard));
  tokens.erase(tokens.begin() + keep, tokens.begin() + keep + n_discard);
  return n_discard;
}

Sequence::Sequence(Context& ctx, SequenceParams params) : ctx_(ctx), params_(params) {
  if (params_.seq < 0 || params_.seq >= kMaxSequences) {
    throw InvalidArgument("sequence id " + std::to_string(params_.seq) + " out of range");
  }
  if (params_.prefill_chunk <= 0) throw InvalidArgument("prefill chunk must be positive");
  if (params_.n_cells < 0 || params_.n_cells > ctx.n_ctx()) {
    throw InvalidArgument("a sequence of " + std::to_string(params_.n_cells) + " cells does not fit a context of " +
                          std::to_string(ctx.n_ctx()));
  }
  n_cells_ = params_.n_cells > 0 ? params_.n_cells : ctx.n_ctx();
  // As llama.cpp: a sliding-window cache cannot shift (KvCache::shift), so a
  // full sequence ends generation and a long prompt is refused.
  if (ctx.cache().window() != nullptr || ctx.cache().recurrent() != nullptr) params_.context_shift = false;
  clear();  // the sequence owns its id: whatever the cache held there goes
}

void Sequence::clear() {
  ctx_.clear(params_.seq);
  cached_.clear();
  history_.clear();
  keep_ = 0;
  dropped_ = 0;
}

void Sequence::assume(std::vector<int32_t> tokens) {
  cached_ = std::move(tokens);
  history_ = cached_;
  keep_ = params_.n_keep > 0 ? std::min<int64_t>(params_.n_keep, static_cast<int64_t>(cached_.size())) : 0;
  dropped_ = 0;
}

int64_t Sequence::keep_for(int64_t n_tokens) const {
  if (params_.n_keep < 0) return n_tokens;
  return std::min(params_.n_keep, n_tokens);
}

int64_t Sequence::shift() {
  const int64_t gone = shift_context(ctx_, params_.seq, cached_, keep_);
  if (gone == 0) {
    throw InvalidArgument("the context of " + std::to_string(n_cells_) + " tokens is full and --keep " +
                          std::to_string(keep_) + " leaves nothing to discard");
  }
  // The dropped tokens follow the earlier dropped ones in the history.
  dropped_ += gone;
  return gone;
}

bool Sequence::evaluate(std::span<const int32_t> tokens, const std::atomic<bool>* interrupt,
                        std::span<const float>& logits, int64_t& done) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  done = 0;
  try {
    while (done < n) {
      if (interrupt != nullptr && interrupt->load()) return false;
      const int64_t len = std::min(params_.prefill_chunk, n - done);
      logits = ctx_.eval(tokens.subspan(static_cast<size_t>(done), static_cast<size_t>(len)), params_.seq);
      cached_.insert(cached_.end(), tokens.begin() + done, tokens.begin() + done + len);
      done += len;
    }
  } catch (...) {
    // The passes that went through stay in the cache.
    const int64_t before = static_cast<int64_t>(cached_.size()) - done;
    const int64_t held = ctx_.cache().max_pos(params_.seq) + 1;
    cached_.insert(cached_.end(), tokens.begin() + done,
                   tokens.begin() + std::clamp<int64_t>(held - before, done, n));
    done = static_cast<int64_t>(cached_.size()) - before;
    throw;
  }
  return true;
}

std::span<const float> Sequence::prefill(std::span<const int32_t> tokens, PrefillStats* stats,
                                         const std::atomic<bool>* interrupt) {
  if (tokens.empty()) throw InvalidArgument("nothing to prefill");
  const auto t0 = Clock::now();
  const int64_t n = static_cast<int64_t>(tokens.size());
  // c: tokens of the history the prompt repeats (the last one is always
  // evaluated, for its logits); r: cache cells that hold them.
  int64_t c = reusable_prefix(history_, tokens);
  int64_t r = c;
  if (dropped_ > 0) {
    if (c >= keep_ + dropped_) {
      r = c - dropped_;
    } else if (c >= keep_) {
      c = r = keep_;  // the prompt parts from the history in its dropped part
    }
  }
  // A window cache that dropped cells the next token would see (kv_cache.h):
  // the prompt is evaluated from its start, as llama.cpp re-processes it.
  if (r > 0 && !ctx_.cache().can_continue(params_.seq, static_cast<int32_t>(r))) c = r = 0;
  const bool gap_kept = dropped_ > 0 && c >= keep_ + dropped_;
  // The kept start stays what the first prompt made it while the new one
  // repeats it.
  const int64_t keep = gap_kept || (!history_.empty() && c >= keep_) ? keep_ : keep_for(n);
  // Tokens after the kept start once everything is in: what the cache holds
  // after it plus what is evaluated.
  const int64_t front = std::min(r, keep);
  const int64_t after_keep = (r - front) + (n - c) - (keep - front);
  const int64_t room = n_cells_ - keep;
  int64_t drop = 0;  // more tokens to leave out, oldest first after the kept start
  if (after_keep > room) {
    if (!params_.context_shift) {
      throw InvalidArgument("the prompt (" + std::to_string(n) + " tokens) does not fit in the context (" +
                            std::to_string(n_cells_) + " tokens)");
    }
    if (room < 2) {
      throw InvalidArgument("--keep " + std::to_string(keep) + " leaves no room in a context of " +
                            std::to_string(n_cells_) + " tokens");
    }
    drop = after_keep - room / 2;
  }
  // Make the cache hold the reused part: cells past r go; when dropping,
  // the oldest reused cells after the kept start go first (a shift).
  ctx_.remove_range(params_.seq, static_cast<int32_t>(r), -1);
  cached_.resize(static_cast<size_t>(r));
  const int64_t cached_after = r - front;  // reused cells after the kept start
  const int64_t shift_cells = std::min(drop, cached_after);
  if (shift_cells > 0) {
    ctx_.remove_range(params_.seq, static_cast<int32_t>(keep), static_cast<int32_t>(keep + shift_cells));
    ctx_.shift_sequence(params_.seq, static_cast<int32_t>(keep + shift_cells), -1, static_cast<int32_t>(-shift_cells));
    cached_.erase(cached_.begin() + keep, cached_.begin() + keep + shift_cells);
  }
  // Then the prompt tokens to evaluate: the part of the kept start the cache
  // lacks, and the rest past the tokens left out.
  std::vector<int32_t> todo(tokens.begin() + front, tokens.begin() + std::max(front, std::min(keep, n)));
  const int64_t skip = drop - shift_cells;  // prompt tokens left out
  const int64_t from = std::max(c, keep) + skip;
  todo.insert(todo.end(), tokens.begin() + from, tokens.end());
  if (gap_kept || drop > 0) {
    keep_ = keep;
    dropped_ = (gap_kept ? dropped_ : 0) + drop;
  } else {
    keep_ = std::min(keep, n);
    dropped_ = 0;
  }
  // The history is the prompt, as far as the cache will hold it.
  history_.assign(tokens.begin(), tokens.end());
  std::span<const float> logits;
  int64_t done = 0;
  bool complete = false;
  try {
    complete = evaluate(todo, interrupt, logits, done);
  } catch (...) {
    if (static_cast<int64_t>(cached_.size()) < keep_) dropped_ = 0;
    history_.resize(static_cast<size_t>(static_cast<int64_t>(cached_.size()) + dropped_));
    throw;
  }
  if (!complete) {
    if (static_cast<int64_t>(cached_.size()) < keep_) dropped_ = 0;  // interrupted before the kept start was in
    history_.resize(static_cast<size_t>(static_cast<int64_t>(cached_.size()) + dropped_));
  }
  if (stats != nullptr) {
    stats->n_prompt = n;
    stats->n_reused = r - shift_cells;
    stats->n_evaluated = done;
    stats->n_dropped = n - stats->n_reused - static_cast<int64_t>(todo.size());
    stats->seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  return complete ? logits : std::span<const float>();
}

std::span<const float> Sequence::feed(int32_t token) {
  if (full()) {
    if (!params_.context_shift) {
      throw InvalidArgument("the context of " + std::to_string(n_cells_) + " tokens is full");
    }
    shift();
  }
  const int32_t one[1] = {token};
  std::span<const float> logits = ctx_.eval(one, params_.seq);
  cached_.push_back(token);
  history_.push_back(token);
  return logits;
}

std::span<const float> Sequence::feed_all(std::span<const int32_t> tokens) {
  if (static_cast<int64_t>(tokens.size()) > room()) {
    throw InvalidArgument(std::to_string(tokens.size()) + " tokens do not fit the " + std::to_string(room()) +
                          " cells left in the sequence");
  }
  std::span<const float> logits = ctx_.eval(tokens, params_.seq, /*all_logits=*/true, /*rows_as_steps=*/true);
  cached_.insert(cached_.end(), tokens.begin(), tokens.end());
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  return logits;
}

void Sequence::truncate(int64_t n) {
  if (n < 0 || n >= static_cast<int64_t>(cached_.size())) return;
  ctx_.remove_range(params_.seq, static_cast<int32_t>(n), -1);
  cached_.resize(static_cast<size_t>(n));
  history_.resize(static_cast<size_t>(n + dropped_));
}

GenerationStep Sequence::step(Generation& gen, std::span<const float>& logits) {
  GenerationStep s = gen.next(logits);
  if (!s.needs_eval()) return s;
  if (full() && !params_.context_shift) {
    GenerationStep end = gen.end(FinishReason::kContextFull);
    s.text += end.text;
    s.finish = end.finish;
    return s;
  }
  logits = feed(s.token);
  return s;
}

}  // namespace ferrite::runtime
