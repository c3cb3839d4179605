#include "server/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "runtime/context_state.h"

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

namespace {

// finish() runs inside the engine's catch blocks: a request's grammar that
// failed while generating (GrammarConstraintError, thrown through the
// sampler and runtime::Generation) is the request's fault.
ErrorKind error_kind_of_current_exception() {
  const std::exception_ptr ep = std::current_exception();
  if (!ep) return ErrorKind::Internal;
  try {
    std::rethrow_exception(ep);
  } catch (const runtime::GrammarConstraintError&) {
    return ErrorKind::BadRequest;
  } catch (...) {
  }
  return ErrorKind::Internal;
}

}  // namespace

Engine::Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<const tokenizer::Tokenizer> tok,
               EngineOptions options)
    : model_(std::move(model)),
      tok_(std::move(tok)),
      opt_(std::move(options)),
      ctx_(model_, {.n_ctx = opt_.n_ctx, .n_batch = opt_.n_batch, .n_threads = opt_.n_threads,
                    .cache_type = opt_.cache_type_k, .cache_type_v = opt_.cache_type_v,
                    .n_gpu_layers = opt_.n_gpu_layers, .lora = opt_.lora, .lora_scales = opt_.lora_scales,
                    .swa_full = opt_.swa_full, .n_seq_max = std::max(opt_.n_parallel, 1)}),
      vocab_(*tok_) {
  // As llama.cpp: no context shift with a sliding-window cache (a full slot ends with "length").
  if (ctx_.cache().window() != nullptr || ctx_.cache().recurrent() != nullptr) opt_.context_shift = false;
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
  if (opt_.embeddings && !is_encoder()) {
    // Decoders without a pooling of their own are pooled by mean, as OpenAI
    // clients expect one vector per input.
    const int pooling = opt_.pooling >= 0 ? opt_.pooling
                        : model_->hparams().pooling == model::Pooling::None ? static_cast<int>(model::Pooling::Mean)
                                                                            : -1;
    embed_ctx_ = std::make_unique<runtime::Context>(
        model_, runtime::ContextParams{.n_ctx = slot_ctx_, .n_batch = opt_.n_batch, .n_threads = opt_.n_threads,
                                       .cache_type = opt_.cache_type_k, .cache_type_v = opt_.cache_type_v,
                                       .n_gpu_layers = 0, .embeddings = true, .pooling_type = pooling});
  }
  runtime::validate(opt_.speculative);
  if (opt_.make_drafter && ctx_.cache().recurrent() != nullptr) {
    throw InvalidArgument("speculative decoding is not supported for a model with recurrent (SSM) layers: a rejected "
                          "draft cannot be taken back out of their state");
  }
  if (opt_.make_drafter) {
    for (Slot& s : slots_) s.drafter = opt_.make_drafter(s.id, slot_ctx_, n_ctx_);
  }
  lora_default_ = ctx_.lora().scales();
  for (Slot& s : slots_) s.lora = lora_default_;
  n_idle_ = opt_.n_parallel;
  publish();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(); }

bool Engine::is_encoder() const { return model_->arch().is_encoder(); }

int64_t Engine::embedding_n_ctx() const { return embed_ctx_ ? embed_ctx_->n_ctx() : n_ctx_; }

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
  if (!embed_queue_.empty() || !commands_.empty()) return true;
  if (n_idle_ < static_cast<int>(slots_.size())) return true;
  return !queue_.empty();
}

void Engine::publish() {
  std::lock_guard<std::mutex> lock(mu_);
  slot_info_.resize(slots_.size());
  int idle = 0;
  int64_t cells = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    slot_info_[i] = {s.id, s.state, slot_ctx_, static_cast<int64_t>(s.cached.size()), s.timings, s.n_served};
    cells += static_cast<int64_t>(s.cached.size());
    if (!s.active()) ++idle;
  }
  n_idle_ = idle;
  stats_.active = static_cast<int>(slots_.size()) - idle;
  stats_.cached_cells = cells;
  active_now_.store(stats_.active, std::memory_order_relaxed);
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
    run_slot_actions();
    uint64_t steps_before = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      steps_before = stats_.steps;
    }
    step();
    publish();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stats_.steps > steps_before) stats_.busy_slot_steps += static_cast<uint64_t>(stats_.active);
    }
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& c : commands_) {
      SlotActionResult r;
      r.error = "the server is shutting down";
      c->done.set_value(r);
    }
    commands_.clear();
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
  for (auto it = queue_.begin(); it != queue_.end();) {
    std::shared_ptr<Task> task = *it;
    if (task->cancelled()) {
      it = queue_.erase(it);
      Event ev;
      ev.final = true;
      ev.finish = FinishReason::Cancelled;
      task->push(std::move(ev));
      ++stats_.requests;
      ++stats_.cancelled;
      done_cv_.notify_all();
      continue;
    }
    if (n_idle_ <= 0 || awaits_prefix(*task)) {
      ++it;  // no slot yet (cancelled tasks behind still end), or later requests may go first
      continue;
    }
    // The idle slot whose cache shares the longest prefix with the prompt.
    Slot* best = nullptr;
    size_t best_len = 0;
    for (Slot& s : slots_) {
      if (s.active()) continue;
      const size_t len = reusable_prefix(s, task->params().prompt, lora_of(*task));
      if (!best || len > best_len) {
        best = &s;
        best_len = len;
      }
    }
    if (!best) break;
    it = queue_.erase(it);
    --n_idle_;
    start(*best, std::move(task));
  }
  stats_.queued = queue_.size() + embed_queue_.size();
}

bool Engine::awaits_prefix(const Task& task) const {
  if (!opt_.prefix_cache) return false;
  const std::vector<int32_t>& prompt = task.params().prompt;
  if (prompt.size() < 2) return false;
  const size_t limit = prompt.size() - 1;  // the last prompt token is always evaluated
  const std::vector<float>& lora = lora_of(task);
  size_t cached = 0;
  for (const Slot& s : slots_) cached = std::max(cached, std::min(reusable_prefix(s, prompt, lora), limit));
  for (const Slot& s : slots_) {
    if (s.state != SlotState::Prefill || !s.task || s.lora != lora) continue;
    const size_t coming = std::min(common_prefix(s.task->params().prompt, prompt), limit);
    if (coming >= cached + kPrefixWaitMin && s.n_prompt_done < coming) return true;
  }
  return false;
}

size_t Engine::reusable_prefix(const Slot& s, const std::vector<int32_t>& prompt,
                               const std::vector<float>& lora) const {
  if (s.lora != lora) return 0;  // cells of other adapter scales hold other keys and values
  size_t len = common_prefix(s.cached, prompt);
  if (s.reuse_limit >= 0) len = std::min(len, static_cast<size_t>(s.reuse_limit));
  return len;
}

size_t Engine::copy_prefix(Slot& slot, const std::vector<int32_t>& prompt, size_t keep) {
  if (!opt_.prefix_cache) return keep;
  const Slot* donor = nullptr;
  size_t len = keep;
  for (const Slot& s : slots_) {
    if (&s == &slot) continue;
    const size_t l = std::min(reusable_prefix(s, prompt, slot.lora), prompt.size() - 1);
    if (l > len) {
      donor = &s;
      len = l;
    }
  }
  if (donor == nullptr) return keep;
  try {
    ctx_.copy_range(donor->id, slot.id, static_cast<int32_t>(keep), static_cast<int32_t>(len));
  } catch (const std::exception&) {
    return keep;  // too few free cells, or the GPU's copy failed (nothing copied): evaluate the prompt instead
  }
  if (!ctx_.cache().can_continue(slot.id, static_cast<int32_t>(len))) {
    // The donor's window moved past what the copy's next token would see.
    ctx_.cache().remove(slot.id, static_cast<int32_t>(keep), -1);
    return keep;
  }
  slot.cached.assign(prompt.begin(), prompt.begin() + static_cast<std::ptrdiff_t>(len));
  stats_.prefix_copied_tokens += len - keep;
  return len;
}

void Engine::start(Slot& slot, std::shared_ptr<Task> task) {
  const GenerationParams& p = task->params();
  // Keep the common prefix, but evaluate at least the last prompt token to
  // get its logits.
  const std::vector<float>& lora = lora_of(*task);
  size_t keep = std::min(reusable_prefix(slot, p.prompt, lora), p.prompt.size() - 1);
  // A window cache that dropped what the next token would see: evaluate the prompt again.
  if (!ctx_.cache().can_continue(slot.id, static_cast<int32_t>(keep))) keep = 0;
  slot.reuse_limit = -1;
  ctx_.cache().remove(slot.id, static_cast<int32_t>(keep), -1);
  slot.cached.resize(keep);
  slot.lora = lora;
  if (ctx_.lora().size() > 0) ctx_.lora().set_scales(slot.lora, slot.id);
  keep = copy_prefix(slot, p.prompt, keep);
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
    ev.error_kind = dynamic_cast<const InvalidArgument*>(&e) ? ErrorKind::BadRequest : ErrorKind::Internal;
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
  if (reason == FinishReason::Error) ev.error_kind = error_kind_of_current_exception();
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
    stats_.prompt_ms += slot.timings.prompt_ms;
    stats_.generation_ms += slot.timings.generation_ms;
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
    if (!serves_embeddings()) throw InvalidArgument("this model does not produce embeddings");
    runtime::Context& ctx = is_encoder() ? ctx_ : *embed_ctx_;
    const auto& prompt = task.params().prompt;
    if (task.cancelled()) throw Cancelled("the request was cancelled");
    if (static_cast<int64_t>(prompt.size()) > ctx.n_ctx()) {
      throw InvalidArgument("input of " + std::to_string(prompt.size()) + " tokens exceeds the context size " +
                            std::to_string(ctx.n_ctx()));
    }
    if (&ctx != &ctx_) ctx.clear();
    runtime::Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) b.add(prompt[i], static_cast<int32_t>(i), 0, true);
    b.types = task.params().token_types;  // empty, or one per prompt token (the context checks)
    ctx.decode(b);
    std::span<const float> e = ctx.embeddings(0);
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

namespace {

// A saved slot must hold one token per cell (the slot's cache is its token
// list) and fit the slot: checked from the file's header (context_state.h)
// before anything is loaded.
void check_slot_file(const std::string& path, int64_t slot_ctx) {
  constexpr size_t kHeaderWords = 10;
  constexpr size_t kTokensWord = 8, kCellsWord = 9;
  uint32_t header[kHeaderWords] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw IoError(path, "cannot open the saved slot");
  const size_t n = std::fread(header, sizeof(uint32_t), kHeaderWords, f);
  std::fclose(f);
  if (n != kHeaderWords || header[0] != runtime::kSequenceStateMagic) {
    throw InvalidArgument(path + " is not a saved slot");
  }
  if (header[kTokensWord] != header[kCellsWord]) {
    throw InvalidArgument(path + " holds " + std::to_string(header[kCellsWord]) + " cells but " +
                          std::to_string(header[kTokensWord]) + " tokens: not a saved slot");
  }
  if (static_cast<int64_t>(header[kCellsWord]) >= slot_ctx) {
    throw InvalidArgument("the saved slot holds " + std::to_string(header[kCellsWord]) +
                          " tokens; a slot holds fewer than " + std::to_string(slot_ctx));
  }
}

}  // namespace

SlotActionResult Engine::slot_action(int slot, SlotAction action, const std::string& path) {
  if (slot < 0 || slot >= n_parallel()) {
    throw InvalidArgument("slot " + std::to_string(slot) + " does not exist (0.." + std::to_string(n_parallel() - 1) + ")");
  }
  auto cmd = std::make_shared<SlotCommand>();
  cmd->slot = slot;
  cmd->action = action;
  cmd->path = path;
  std::future<SlotActionResult> result = cmd->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      SlotActionResult r;
      r.error = "the server is shutting down";
      return r;
    }
    commands_.push_back(cmd);
  }
  cv_.notify_all();
  return result.get();
}

void Engine::run_slot_actions() {
  std::deque<std::shared_ptr<SlotCommand>> todo;
  {
    std::lock_guard<std::mutex> lock(mu_);
    todo.swap(commands_);
  }
  for (auto& c : todo) {
    SlotActionResult r;
    Slot& s = slots_[static_cast<size_t>(c->slot)];
    const auto t0 = std::chrono::steady_clock::now();
    if (s.active()) {
      r.busy = true;
      r.error = "slot " + std::to_string(c->slot) + " is serving a request";
      c->done.set_value(r);
      continue;
    }
    try {
      std::error_code ec;
      switch (c->action) {
        case SlotAction::Save:
          ctx_.save_sequence(s.id, c->path, s.cached);
          r.n_tokens = static_cast<int64_t>(s.cached.size());
          r.n_bytes = std::filesystem::file_size(c->path, ec);
          break;
        case SlotAction::Restore: {
          check_slot_file(c->path, slot_ctx_);
          s.cached.clear();
          s.cached = ctx_.load_sequence(s.id, c->path);
          {
            // Taken as evaluated with the current default scales (the file does not say).
            std::lock_guard<std::mutex> lock(mu_);
            s.lora = lora_default_;
          }
          if (ctx_.lora().size() > 0) ctx_.lora().set_scales(s.lora, s.id);
          r.n_tokens = static_cast<int64_t>(s.cached.size());
          r.n_bytes = std::filesystem::file_size(c->path, ec);
          break;
        }
        case SlotAction::Erase:
          r.n_tokens = static_cast<int64_t>(s.cached.size());
          ctx_.cache().remove(s.id, 0, -1);
          s.cached.clear();
          break;
      }
      r.ok = true;
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    publish();
    c->done.set_value(r);
  }
}

}  // namespace ferrite::server
