#include "server/engine.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace ferrite::server {

const char* slot_state_name(SlotState s) {
  switch (s) {
    case SlotState::Idle: return "idle";
    case SlotState::Prefill: return "prefill";
    case SlotState::Generate: return "generate";
  }
  return "?";
}

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

Engine::Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<const tokenizer::Tokenizer> tok,
               EngineOptions options)
    : model_(std::move(model)),
      tok_(std::move(tok)),
      opt_(std::move(options)),
      ctx_(model_, {.n_ctx = opt_.n_ctx, .n_batch = opt_.n_batch, .n_threads = opt_.n_threads,
                    .cache_type = opt_.cache_type_k, .cache_type_v = opt_.cache_type_v,
                    .n_gpu_layers = opt_.n_gpu_layers}),
      vocab_(*tok_) {
  if (opt_.n_parallel < 1 || opt_.n_parallel > runtime::kMaxSequences) {
    throw InvalidArgument("--parallel must be between 1 and " + std::to_string(runtime::kMaxSequences));
  }
  if (opt_.n_batch < 1) throw InvalidArgument("--batch-size must be positive");
  n_ctx_ = ctx_.n_ctx();
  slot_ctx_ = n_ctx_ / opt_.n_parallel;
  if (slot_ctx_ < 2) throw InvalidArgument("context size " + std::to_string(n_ctx_) + " is too small for " +
                                           std::to_string(opt_.n_parallel) + " slots");
  slots_.resize(static_cast<size_t>(opt_.n_parallel));
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].id = static_cast<int>(i);
    // Slot i's share of the cache is [i * slot_ctx_, (i + 1) * slot_ctx_) (a slot never holds more cells).
    ctx_.cache().set_sequence_home(slots_[i].id, static_cast<int64_t>(i) * slot_ctx_, slot_ctx_);
  }
  n_idle_ = opt_.n_parallel;
  publish();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(); }

bool Engine::is_encoder() const { return model_->arch().is_encoder(); }

bool Engine::submit(std::shared_ptr<Task> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t waiting = queue_.size() + embed_queue_.size();
    if (stopping_ || waiting >= opt_.max_queue + static_cast<size_t>(n_idle_)) {
      ++stats_.rejected;
      return false;
    }
    if (task->params().embedding) {
      embed_queue_.push_back(std::move(task));
    } else {
      queue_.push_back(std::move(task));
    }
    stats_.queued = queue_.size() + embed_queue_.size();
  }
  cv_.notify_all();
  return true;
}

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

std::vector<SlotInfo> Engine::slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slot_info_;
}

EngineStats Engine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

uint64_t Engine::wait_cancelled(uint64_t n) const {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return stats_.cancelled >= n; });
  return stats_.cancelled;
}

bool Engine::has_work_locked() const {
  if (!embed_queue_.empty()) return true;
  if (n_idle_ < static_cast<int>(slots_.size())) return true;
  return !queue_.empty();
}

void Engine::publish() {
  std::lock_guard<std::mutex> lock(mu_);
  slot_info_.resize(slots_.size());
  int idle = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    slot_info_[i] = {s.id, s.state, slot_ctx_, static_cast<int64_t>(s.cached.size()), s.timings, s.n_served};
    if (!s.active()) ++idle;
  }
  n_idle_ = idle;
  stats_.active = static_cast<int>(slots_.size()) - idle;
  stats_.queued = queue_.size() + embed_queue_.size();
}

void Engine::loop() {
  for (;;) {
    std::vector<std::shared_ptr<Task>> embeds;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || has_work_locked(); });
      if (stopping_) break;
      embeds.assign(embed_queue_.begin(), embed_queue_.end());
      embed_queue_.clear();
      assign_locked();
    }
    for (auto& t : embeds) run_embedding(*t);
    step();
    publish();
    if (opt_.after_step) opt_.after_step();
  }
  // Shutting down: nothing more will be served.
  std::deque<std::shared_ptr<Task>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    left.swap(queue_);
    for (auto& t : embed_queue_) left.push_back(t);
    embed_queue_.clear();
  }
  for (auto& t : left) {
    t->cancel();
    Event ev;
    ev.final = true;
    ev.finish = FinishReason::Cancelled;
    ev.error = "the server is shutting down";
    t->push(std::move(ev));
  }
  for (Slot& s : slots_) {
    if (s.active()) finish(s, FinishReason::Cancelled, Event{}, "the server is shutting down");
  }
  publish();
}

void Engine::assign_locked() {
  while (!queue_.empty()) {
    std::shared_ptr<Task> task = queue_.front();
    if (task->cancelled()) {
      queue_.pop_front();
      Event ev;
      ev.final = true;
      ev.finish = FinishReason::Cancelled;
      task->push(std::move(ev));
      ++stats_.requests;
      ++stats_.cancelled;
      done_cv_.notify_all();
      continue;
    }
    // The idle slot whose cache shares the longest prefix with the prompt.
    Slot* best = nullptr;
    size_t best_len = 0;
    for (Slot& s : slots_) {
      if (s.active()) continue;
      const size_t len = common_prefix(s.cached, task->params().prompt);
      if (!best || len > best_len) {
        best = &s;
        best_len = len;
      }
    }
    if (!best) return;
    queue_.pop_front();
    --n_idle_;
    start(*best, std::move(task));
  }
}

void Engine::start(Slot& slot, std::shared_ptr<Task> task) {
  const GenerationParams& p = task->params();
  // Keep the common prefix, but evaluate at least the last prompt token to
  // get its logits.
  size_t keep = common_prefix(slot.cached, p.prompt);
  if (slot.reuse_limit >= 0) keep = std::min(keep, static_cast<size_t>(slot.reuse_limit));
  if (keep >= p.prompt.size()) keep = p.prompt.size() - 1;
  slot.reuse_limit = -1;
  ctx_.cache().remove(slot.id, static_cast<int32_t>(keep), -1);
  slot.cached.resize(keep);
  slot.n_prompt_done = keep;
  slot.pending = -1;
  slot.task = std::move(task);
  slot.state = SlotState::Prefill;
  slot.timings = {};
  slot.timings.n_prompt = static_cast<int32_t>(p.prompt.size());
  slot.timings.n_cached = static_cast<int32_t>(keep);
  slot.t_start = std::chrono::steady_clock::now();
  slot.gen.reset();
  const int64_t n_prompt = static_cast<int64_t>(p.prompt.size());
  const bool bos = tok_->bos() >= 0 && p.prompt.front() == tok_->bos();
  slot.n_keep = p.n_keep < 0 || p.n_keep > n_prompt ? n_prompt : std::min(n_prompt, p.n_keep + (bos ? 1 : 0));
  stats_.cached_tokens += keep;
  // No budget: until the slot's share of the cache is full (a context shift
  // would otherwise let it run on for ever).
  runtime::GenerationParams gp = p;
  if (gp.n_predict < 0) gp.n_predict = std::max<int64_t>(1, slot_ctx_ - n_prompt);
  try {
    slot.gen = std::make_unique<runtime::Generation>(
        vocab_, gp,
        runtime::GenerationContext{.n_ctx = static_cast<int32_t>(slot_ctx_),
                                   .n_ctx_train = static_cast<int32_t>(model_->hparams().n_ctx_train)},
        p.prompt);
  } catch (const std::exception& e) {
    // Bad sampling parameters or grammar: the caller holds mu_, so end the
    // task here rather than through finish().
    Event ev;
    ev.final = true;
    ev.finish = FinishReason::Error;
    ev.error = e.what();
    ev.slot = slot.id;
    slot.task->push(std::move(ev));
    slot.task.reset();
    slot.gen.reset();
    slot.state = SlotState::Idle;
    ++n_idle_;
    ++stats_.requests;
  }
}

void Engine::finish(Slot& slot, FinishReason reason, Event ev, const std::string& error) {
  const auto now = std::chrono::steady_clock::now();
  if (slot.state == SlotState::Generate) {
    slot.timings.generation_ms = std::chrono::duration<double, std::milli>(now - slot.t_first).count();
  }
  ev.final = true;
  ev.finish = reason;
  ev.error = error;
  ev.timings = slot.timings;
  ev.slot = slot.id;
  if (slot.gen && slot.gen->done()) {
    ev.stop_word = slot.gen->stop_word();
    if (slot.task && slot.task->params().parse_tool_calls) ev.reply = slot.gen->reply();
  }
  std::shared_ptr<Task> task = std::move(slot.task);
  slot.task.reset();
  slot.gen.reset();
  slot.state = SlotState::Idle;
  ++slot.n_served;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.requests;
    if (reason == FinishReason::Cancelled) ++stats_.cancelled;
  }
  // Counts and slot states are visible before the client hears of the end.
  publish();
  if (task) task->push(std::move(ev));
  done_cv_.notify_all();
  cv_.notify_all();
}

void Engine::run_embedding(Task& task) {
  Event ev;
  ev.final = true;
  try {
    if (!is_encoder()) throw InvalidArgument("this model does not produce embeddings");
    const auto& prompt = task.params().prompt;
    if (static_cast<int64_t>(prompt.size()) > n_ctx_) {
      throw InvalidArgument("input of " + std::to_string(prompt.size()) + " tokens exceeds the context size " +
                            std::to_string(n_ctx_));
    }
    runtime::Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, true);
    ctx_.decode(b);
    std::span<const float> e = ctx_.embeddings(0);
    ev.embedding.assign(e.begin(), e.end());
    ev.finish = FinishReason::Stop;
    ev.timings.n_prompt = static_cast<int32_t>(prompt.size());
  } catch (const std::exception& e) {
    ev.finish = FinishReason::Error;
    ev.error = e.what();
  }
  task.push(std::move(ev));
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.requests;
  stats_.prompt_tokens += task.params().prompt.size();
}

}  // namespace ferrite::server
