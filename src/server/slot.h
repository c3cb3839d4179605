// One slot of the engine: a sequence id of the shared KV cache, the tokens
// whose keys and values it holds, and the request it is serving (if any).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/drafter.h"
#include "runtime/generation.h"
#include "server/task.h"

namespace ferrite::server {

enum class SlotState { Idle, Prefill, Generate };
const char* slot_state_name(SlotState s);

struct Slot {
  int id = 0;  // also the KV cache sequence id
  SlotState state = SlotState::Idle;
  std::shared_ptr<Task> task;
  std::vector<int32_t> cached;   // tokens in the cache at positions 0..size-1
  std::vector<float> lora;       // the LoRA scales those cells were evaluated with
  size_t n_prompt_done = 0;      // prompt tokens in the cache
  int32_t pending = -1;          // sampled, not yet evaluated
  std::unique_ptr<runtime::Generation> gen;  // the request's generation step
  int64_t n_keep = 0;            // tokens a context shift keeps
  int64_t reuse_limit = -1;      // after a shift: cached tokens a later request may reuse (-1: all)
  Timings timings;
  std::chrono::steady_clock::time_point t_start, t_first;
  uint64_t n_served = 0;         // requests completed in this slot
  std::unique_ptr<runtime::Drafter> drafter;  // speculative decoding; null: none
  std::vector<int32_t> draft;    // this step's draft, after `pending` in the batch
  size_t draft_row = 0;          // the draft's rows sampled so far this step
  bool draft_done = false;       // a row rejected the draft (or ended the request)

  bool active() const { return state != SlotState::Idle; }
};

// What /slots shows of a slot.
struct SlotInfo {
  int id = 0;
  SlotState state = SlotState::Idle;
  int64_t n_ctx = 0;
  int64_t n_cached = 0;   // tokens held in the cache
  Timings last;           // the current or last request's counts
  uint64_t n_served = 0;
};

// Length of the common prefix of two token sequences.
size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace ferrite::server
