// Speculative decoding in the engine: each generating slot's drafter
// proposes tokens after its pending one; they join the step's batch (every
// row with logits), and the rows are then sampled in order as without
// speculation. A row whose token equals the next draft token accepts it (its
// cell already holds it); the first that differs drops the rest of the draft
// from the slot's cache and leaves its token pending for the next step.
// runtime/speculative.h explains why the output keeps the target's
// distribution: the same tokens, drawn by the same sampler, as one token per
// step would give.
#include <algorithm>

#include "server/engine.h"

namespace ferrite::server {

void Engine::add_draft(Slot& slot, int64_t batch_room) {
  // slot.cached ends with the pending token. k drafts need k more cells and
  // one for the token sampled after them (make_room must never shift while
  // the draft is in the cache); k + 1 rows give k + 1 tokens at most.
  int64_t k = std::min<int64_t>(opt_.speculative.n_max, batch_room);
  k = std::min<int64_t>(k, slot_ctx_ - static_cast<int64_t>(slot.cached.size()) - 1);
  if (slot.gen->n_left() >= 0) k = std::min<int64_t>(k, slot.gen->n_left() - 1);
  if (k < std::max(opt_.speculative.n_min, 1)) return;
  std::vector<int32_t> draft;
  try {
    draft = slot.drafter->draft(slot.cached, static_cast<int>(k));
  } catch (const std::exception&) {
    return;  // a drafter that fails (its own context full, say) only costs the speed-up
  }
  if (static_cast<int64_t>(draft.size()) > k) draft.resize(static_cast<size_t>(k));
  if (draft.empty() || static_cast<int>(draft.size()) < opt_.speculative.n_min) return;
  for (int32_t t : draft) {
    batch_.add(t, static_cast<int32_t>(slot.cached.size()), slot.id, true);
    slot.cached.push_back(t);
  }
  slot.draft = std::move(draft);
  slot.draft_row = 0;
  slot.draft_done = false;
}

void Engine::verify_row(Slot& slot, std::span<const float> logits) {
  if (slot.draft_done) return;  // the rows after a rejection, or after the request ended
  const size_t j = slot.draft_row++;
  const size_t k = slot.draft.size();
  if (j == 0) {
    slot.timings.n_drafted += static_cast<int32_t>(k);
    std::lock_guard<std::mutex> lock(mu_);
    stats_.drafted_tokens += k;
  }
  sample(slot, logits);
  if (j == k) return;  // the row after the whole draft: an ordinary step
  const bool accepted = slot.state == SlotState::Generate && slot.pending == slot.draft[j];
  if (accepted) {
    ++slot.timings.n_draft_accepted;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.draft_accepted_tokens;
    return;
  }
  slot.draft_done = true;
  if (slot.state != SlotState::Generate) return;  // ended: the cache may keep the drafts (cached lists them)
  const size_t keep = slot.cached.size() - (k - j);
  ctx_.cache().remove(slot.id, static_cast<int32_t>(keep), -1);
  slot.cached.resize(keep);
}

}  // namespace ferrite::server
