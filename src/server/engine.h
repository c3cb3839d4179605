// The engine: one thread that owns the inference context and serves every
// request through N slots sharing one KV cache (continuous batching). Each
// step evaluates one batch holding the next token of every generating slot
// plus a chunk of the prompts being read, then samples for every slot that
// produced logits. HTTP threads talk to it only through submit() and their
// Task's channel.
//
//   Engine engine(model, tok, {.n_parallel = 4});
//   auto task = std::make_shared<Task>(params);
//   if (!engine.submit(task)) -> 503
//   ... task->next(ev) ...
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gguf/tensor_type.h"
#include "model/model.h"
#include "runtime/batch.h"
#include "runtime/context.h"
#include "runtime/drafter.h"
#include "runtime/speculative.h"
#include "runtime/generation.h"
#include "server/slot.h"
#include "server/task.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::server {

struct EngineOptions {
  int n_parallel = 1;        // slots
  int64_t n_ctx = 0;         // cache cells shared by all slots (0: the model's, capped); each slot gets n_ctx / n_parallel
  int64_t n_batch = 512;     // tokens per step (generation tokens first, then prompt chunks)
  int n_threads = 0;         // 0: all CPUs
  size_t max_queue = 64;     // requests waiting for a slot beyond the idle slots
  // Called on the engine thread after every step (tests use it to hold the engine).
  std::function<void()> after_step;
  TensorType cache_type_k = TensorType::F16;  // KV cache types (runtime::ContextParams)
  TensorType cache_type_v = TensorType::F16;
  bool swa_full = false;                      // sliding-window layers keep the whole context (ContextParams)
  int n_gpu_layers = 0;                       // layers on the GPU (runtime::kAllLayers: all); needs a CUDA build
  bool context_shift = true;                  // a full slot drops the oldest half of its tokens after n_keep
                                              // (false: the request ends with finish_reason "length")
  // A prompt that starts as another slot's cache (a shared system prompt)
  // copies those cells (runtime::Context::copy_range) instead of evaluating
  // them again; one whose start another slot is reading now waits for it.
  bool prefix_cache = true;
  // Embedding requests for a decoder model: they run in a context of their
  // own (one slot's cells), so the slots' caches are untouched.
  bool embeddings = false;
  int pooling = -1;  // decoders' pooling: -1 the model's (mean when it has none), else runtime's codes
  // Speculative decoding: each slot's drafter, made once per slot when the
  // engine starts (slot id, the slot's cells, all cells); null: none. Each
  // step verifies every generating slot's draft in the step's one batch.
  std::function<std::unique_ptr<runtime::Drafter>(int slot, int64_t slot_ctx, int64_t n_ctx)> make_drafter = {};
  runtime::SpeculativeParams speculative = {};  // --draft-max, --draft-min
  // LoRA adapters (model/lora_adapter.h; ids by position) and their scales
  // for requests without a `lora` field (empty: 1 each); POST /lora-adapters
  // changes those. A request's own `lora` scales apply to its slot only
  // (slots with different adapters share a batch: runtime/lora_state.h).
  std::vector<std::shared_ptr<const model::LoraAdapter>> lora = {};
  std::vector<float> lora_scales = {};
};

// What GET /lora-adapters lists.
struct LoraAdapterInfo {
  int id = 0;
  std::string path;
  float scale = 0.0f;  // the scale of requests without a `lora` field
};

struct EngineStats {
  uint64_t requests = 0;          // tasks finished (any reason)
  uint64_t cancelled = 0;         // tasks ended by cancellation
  uint64_t rejected = 0;          // submissions refused (queue full or stopping)
  uint64_t prompt_tokens = 0;     // prompt tokens evaluated
  uint64_t cached_tokens = 0;     // prompt tokens reused from a slot's cache (its own or, copied, another's)
  uint64_t prefix_copied_tokens = 0;  // of those, copied from another slot's cache
  uint64_t generated_tokens = 0;  // tokens sampled
  uint64_t steps = 0;             // batches decoded
  double decode_ms = 0.0;         // time in the model's passes (all steps)
  double sample_ms = 0.0;         // time sampling and handing out tokens (all steps)
  size_t queued = 0;              // tasks waiting now
  int active = 0;                 // slots busy now
  double prompt_ms = 0.0;         // requests' prompt time, summed when they end
  double generation_ms = 0.0;     // requests' generation time, summed when they end
  uint64_t busy_slot_steps = 0;   // busy slots summed over the steps (/ steps: slots per batch)
  int64_t cached_cells = 0;       // tokens held in the slots' caches now
  uint64_t drafted_tokens = 0;    // speculative draft tokens verified
  uint64_t draft_accepted_tokens = 0;  // of those, accepted
};

// An operation on one idle slot's cache, run on the engine thread between
// steps: save to a file, restore from one, or erase.
enum class SlotAction { Save, Restore, Erase };
struct SlotActionResult {
  bool ok = false;
  bool busy = false;              // the slot was serving a request
  std::string error;
  int64_t n_tokens = 0;           // tokens saved, restored or erased
  uint64_t n_bytes = 0;           // file size written or read
  double ms = 0.0;
};

class Engine {
 public:
  // Throws InvalidArgument for bad options (and what Context throws).
  Engine(std::shared_ptr<const model::Model> model, std::shared_ptr<const tokenizer::Tokenizer> tok,
         EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a task; false when the queue is full or the engine is stopping.
  bool submit(std::shared_ptr<Task> task);

  // The prefix cache: a request waits for another slot to read a shared
  // prompt start when this many or more of its tokens are still to come.
  static constexpr size_t kPrefixWaitMin = 64;
  // Cancels queued and running tasks and stops the thread (idempotent).
  void shutdown();

  std::vector<SlotInfo> slots() const;
  EngineStats stats() const;
  // Blocks until at least `n` tasks have ended by cancellation; returns the count.
  uint64_t wait_cancelled(uint64_t n) const;
  // Slots busy now, without waiting for the engine's lock (the /health route).
  int active_now() const { return active_now_.load(std::memory_order_relaxed); }
  size_t max_queue() const { return opt_.max_queue; }
  // Runs `action` on slot `slot` (save/restore: the file `path`) on the
  // engine thread and waits for it. Throws InvalidArgument for a bad slot.
  SlotActionResult slot_action(int slot, SlotAction action, const std::string& path);
  // Whether embedding requests are served (encoders, or --embeddings).
  bool serves_embeddings() const { return is_encoder() || embed_ctx_ != nullptr; }
  // Whether the model is a reranker (an encoder whose file says pooling rank
  // and holds a classification head): its "embedding" is one score.
  bool is_reranker() const { return is_encoder() && model_->hparams().pooling == model::Pooling::Rank; }
  // The longest input an embedding request may have.
  int64_t embedding_n_ctx() const;

  const model::Model& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
  int n_parallel() const { return static_cast<int>(slots_.size()); }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t slot_ctx() const { return slot_ctx_; }
  bool is_encoder() const;
  bool context_shift() const { return opt_.context_shift; }

  // LoRA adapters (engine_lora.cpp): the list with the default scales, their
  // count, and new default scales (one per adapter; InvalidArgument
  // otherwise). A slot's cache is reused only by a request with the same
  // scales (its keys and values depend on them).
  std::vector<LoraAdapterInfo> lora_adapters() const;
  size_t n_lora() const { return opt_.lora.size(); }
  void set_lora_scales(const std::vector<float>& scales);

 private:
  void loop();
  bool has_work_locked() const;
  void assign_locked();                  // queued tasks -> idle slots
  void start(Slot& slot, std::shared_ptr<Task> task);
  // With the prefix cache: true while a slot reading its prompt will soon
  // hold kPrefixWaitMin or more tokens of this task's prompt beyond what any
  // cache holds now; the task then waits for them (copied when they are
  // there) rather than evaluate the same tokens beside it.
  bool awaits_prefix(const Task& task) const;
  // The start of `prompt` that slot s's cache holds and may lend to a
  // request evaluated with LoRA scales `lora` (none when s used others).
  size_t reusable_prefix(const Slot& s, const std::vector<int32_t>& prompt, const std::vector<float>& lora) const;
  // The LoRA scales a task runs with: its own, else the defaults (under mu_).
  const std::vector<float>& lora_of(const Task& task) const;
  // When another slot's cache holds more of `prompt` than the first `keep`
  // tokens `slot` holds: copies the rest of that prefix into `slot` and
  // returns its length; else `keep`.
  size_t copy_prefix(Slot& slot, const std::vector<int32_t>& prompt, size_t keep);
  void step();                           // one batch (engine_step.cpp)
  void sample(Slot& slot, std::span<const float> logits);
  // Speculative decoding (engine_draft.cpp): appends the slot's draft to
  // the batch after its pending token; samples one of its rows, accepting
  // the draft token there or dropping the rest of the draft.
  void add_draft(Slot& slot, int64_t batch_room);
  void verify_row(Slot& slot, std::span<const float> logits);
  // Room in the slot's share of the cache for its next token: a context
  // shift when allowed; false when the slot is full.
  bool make_room(Slot& slot);
  void finish(Slot& slot, FinishReason reason, Event ev, const std::string& error = {});
  void run_embedding(Task& task);
  void run_slot_actions();
  void publish();                        // refresh slot_info_

  std::shared_ptr<const model::Model> model_;
  std::shared_ptr<const tokenizer::Tokenizer> tok_;
  EngineOptions opt_;
  runtime::Context ctx_;
  int64_t n_ctx_ = 0;
  int64_t slot_ctx_ = 0;
  runtime::GenerationVocab vocab_;

  std::vector<Slot> slots_;  // engine thread only
  runtime::Batch batch_;
  std::unique_ptr<runtime::Context> embed_ctx_;  // decoders' embeddings (EngineOptions::embeddings)

  struct SlotCommand {
    int slot;
    SlotAction action;
    std::string path;
    std::promise<SlotActionResult> done;
  };
  std::deque<std::shared_ptr<SlotCommand>> commands_;  // under mu_
  std::atomic<int> active_now_{0};

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;     // work for the engine
  mutable std::condition_variable done_cv_;  // cancellations (wait_cancelled)
  std::deque<std::shared_ptr<Task>> queue_;
  std::deque<std::shared_ptr<Task>> embed_queue_;
  std::vector<float> lora_default_;        // scales of requests without their own
  std::vector<SlotInfo> slot_info_;
  EngineStats stats_;
  int n_idle_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ferrite::server
