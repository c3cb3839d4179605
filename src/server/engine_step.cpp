// One step of the engine: build the batch (a token for every generating
// slot, then prompt chunks up to the batch size), decode it, sample.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.h"
#include "server/engine.h"
#include "runtime/sequence.h"

namespace ferrite::server {

void Engine::step() {
  for (Slot& s : slots_) {
    if (s.active() && s.task->cancelled()) finish(s, FinishReason::Cancelled, Event{});
  }
  batch_.clear();
  uint64_t n_prompt_tokens = 0;
  for (Slot& s : slots_) {
    s.draft.clear();
    if (s.state != SlotState::Generate) continue;
    batch_.add(s.pending, static_cast<int32_t>(s.cached.size()), s.id, true);
    s.cached.push_back(s.pending);
  }
  // Drafts after every generating slot's token, while the batch has room.
  for (Slot& s : slots_) {
    if (s.state == SlotState::Generate && s.drafter) add_draft(s, opt_.n_batch - batch_.size());
  }
  int64_t budget = opt_.n_batch - batch_.size();
  for (Slot& s : slots_) {
    if (s.state != SlotState::Prefill || budget <= 0) continue;
    const std::vector<int32_t>& prompt = s.task->params().prompt;
    const size_t n = std::min(static_cast<size_t>(budget), prompt.size() - s.n_prompt_done);
    for (size_t i = 0; i < n; ++i) {
      const size_t at = s.n_prompt_done + i;
      batch_.add(prompt[at], static_cast<int32_t>(at), s.id, at + 1 == prompt.size());
      s.cached.push_back(prompt[at]);
    }
    s.n_prompt_done += n;
    budget -= static_cast<int64_t>(n);
    n_prompt_tokens += n;
  }
  if (batch_.size() == 0) return;
  // A batch of drafts (and no prompt chunk, whose rows the GPU then could
  // not batch) is evaluated row by row as one-token steps would be, so that a
  // slot's greedy tokens do not depend on its drafts.
  batch_.rows_as_steps = n_prompt_tokens == 0 && std::any_of(slots_.begin(), slots_.end(), [](const Slot& s) {
                           return !s.draft.empty();
                         });

  const auto t_decode = std::chrono::steady_clock::now();
  try {
    ctx_.decode(batch_);
  } catch (const std::exception& e) {
    // Forget what the failed batch's slots hold and end their requests.
    for (Slot& s : slots_) {
      if (!s.active() || std::find(batch_.seq.begin(), batch_.seq.end(), s.id) == batch_.seq.end()) continue;
      ctx_.cache().remove(s.id, 0, -1);
      s.cached.clear();
      finish(s, FinishReason::Error, Event{}, std::string("evaluation failed: ") + e.what());
    }
    return;
  }
  const auto t_sample = std::chrono::steady_clock::now();
  int64_t out = 0;
  for (int64_t i = 0; i < batch_.size(); ++i) {
    if (!batch_.want_logits[static_cast<size_t>(i)]) continue;
    Slot& s = slots_[static_cast<size_t>(batch_.seq[static_cast<size_t>(i)])];
    if (!s.draft.empty()) {
      verify_row(s, ctx_.logits(out++));
    } else {
      sample(s, ctx_.logits(out++));
    }
  }
  for (Slot& s : slots_) s.draft.clear();
  const auto t_end = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  stats_.prompt_tokens += n_prompt_tokens;
  ++stats_.steps;
  stats_.decode_ms += std::chrono::duration<double, std::milli>(t_sample - t_decode).count();
  stats_.sample_ms += std::chrono::duration<double, std::milli>(t_end - t_sample).count();
}

namespace {

FinishReason finish_of(runtime::FinishReason r) {
  return r == runtime::FinishReason::kLength || r == runtime::FinishReason::kContextFull ? FinishReason::Length
                                                                                         : FinishReason::Stop;
}

}  // namespace

bool Engine::make_room(Slot& slot) {
  if (static_cast<int64_t>(slot.cached.size()) + 1 <= slot_ctx_) return true;
  if (!opt_.context_shift) return false;
  const int64_t gone = runtime::shift_context(ctx_, slot.id, slot.cached, slot.n_keep);
  slot.timings.n_shifted += static_cast<int32_t>(gone);
  // The cells after n_keep now hold keys computed with the dropped tokens in
  // view: a later request may reuse only the kept start.
  if (gone > 0) slot.reuse_limit = slot.n_keep;
  return gone > 0;
}

void Engine::sample(Slot& slot, std::span<const float> logits) {
  const auto now = std::chrono::steady_clock::now();
  if (slot.state == SlotState::Prefill) {
    slot.state = SlotState::Generate;
    slot.t_first = now;
    slot.timings.prompt_ms = std::chrono::duration<double, std::milli>(now - slot.t_start).count();
  }
  runtime::GenerationStep step;
  try {
    step = slot.gen->next(logits);
  } catch (const std::exception& e) {
    finish(slot, FinishReason::Error, Event{}, std::string("sampling failed: ") + e.what());
    return;
  }
  slot.timings.n_generated = static_cast<int32_t>(slot.gen->n_generated());
  Event ev;
  ev.text = std::move(step.text);
  if (step.token >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.generated_tokens;
  }
  if (step.has_logprob && step.token >= 0) {
    TokenInfo info;
    info.id = step.token;
    info.piece = tok_->token_to_piece(step.token, false);
    info.logprob = step.logprob.logprob;
    info.top = std::move(step.logprob.top);
    ev.tokens.push_back(std::move(info));
  }
  if (step.finish != runtime::FinishReason::kNone) {
    finish(slot, finish_of(step.finish), std::move(ev));
    return;
  }
  // The sampled token needs a cell of the slot's share of the cache.
  if (!make_room(slot)) {
    ev.text += slot.gen->end(runtime::FinishReason::kContextFull).text;
    finish(slot, FinishReason::Length, std::move(ev));
    return;
  }
  slot.pending = step.token;
  if (!ev.text.empty() || !ev.tokens.empty()) slot.task->push(std::move(ev));
}

}  // namespace ferrite::server
