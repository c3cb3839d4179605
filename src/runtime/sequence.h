// One sequence of a Context as a single generator drives it (ferrite run and
// chat, the Python binding): the tokens the cache holds, in position order,
// and the text they continue. prefill() keeps what the cache already holds of
// a new prompt; feed() appends one token. When the sequence is full, a
// context shift (llama.cpp's) makes room: the first n_keep tokens stay, half
// of the rest go, and the later tokens move down, their cached keys
// re-rotated (Context::shift_sequence). A prompt longer than the sequence is
// cut the same way before it is evaluated.
//
//   Sequence seq(ctx, {.n_keep = 1});
//   std::span<const float> logits = seq.prefill(prompt);
//   Generation gen(vocab, params, {...}, prompt);
//   while (!gen.done()) show(seq.step(gen, logits).text);
//
// The context must outlive the sequence; nothing else may use its sequence id.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/generation.h"

namespace ferrite::runtime {

struct SequenceParams {
  int seq = 0;                  // the cache sequence used
  int64_t n_cells = 0;          // cells the sequence may hold (0: the whole context)
  int64_t n_keep = 0;           // tokens a shift keeps at the start (-1: the whole first prompt)
  bool context_shift = true;    // false: a full sequence ends generation (kContextFull), a long prompt is refused
  int64_t prefill_chunk = 512;  // prompt tokens per evaluation between interrupt checks
};

struct PrefillStats {
  int64_t n_prompt = 0;     // tokens of the prompt
  int64_t n_reused = 0;     // of those, kept from the cache
  int64_t n_evaluated = 0;  // of those, evaluated now
  int64_t n_dropped = 0;    // of those, left out by a context shift (neither reused nor evaluated)
  double seconds = 0;
  std::string kv_note;      // ChatSession::load(): how the KV state was restored, or why not
};

// How many leading tokens of `wanted` can stay in a cache holding `cached`:
// their common prefix, but never all of `wanted` (the last token is always
// evaluated so that its logits exist).
int64_t reusable_prefix(std::span<const int32_t> cached, std::span<const int32_t> wanted);

// Context shift on a sequence holding `tokens` at positions 0..size-1: keeps
// the first n_keep, discards half of the others (the oldest) and moves the
// rest down. Returns how many went (0 when fewer than two follow n_keep).
int64_t shift_context(Context& ctx, int seq, std::vector<int32_t>& tokens, int64_t n_keep);

class Sequence {
 public:
  // Throws InvalidArgument for a bad sequence id, size or chunk.
  Sequence(Context& ctx, SequenceParams params);

  // Makes the sequence continue `tokens` (the whole text so far: a prompt,
  // a rendered conversation) and returns the logits after the last one.
  // What the cache holds of them is kept: the common prefix, and after a
  // shift the kept start and the tail that follows the dropped part. A
  // prompt that does not fit keeps its first n_keep tokens and as much of
  // its end as fills half the room after them. Throws InvalidArgument for no
  // tokens, or one that does not fit while context shift is off (the cache
  // is then unchanged). When `interrupt` becomes set between chunks, returns
  // an empty span (the sequence then holds a prefix of the tokens).
  std::span<const float> prefill(std::span<const int32_t> tokens, PrefillStats* stats = nullptr,
                                 const std::atomic<bool>* interrupt = nullptr);
  // Appends one token and returns the logits after it, shifting first when
  // the sequence is full. Throws InvalidArgument when full with shift off.
  std::span<const float> feed(int32_t token);
  // One generation step (Generation::next) whose token, unless the step ends
  // the generation, is fed; `logits` becomes the logits after it. With shift
  // off a full sequence ends the generation (kContextFull).
  GenerationStep step(Generation& gen, std::span<const float>& logits);
  // Appends `tokens` in one batch and returns the logits after each of them
  // ([n, n_vocab]: row i follows tokens[i], bit for bit what one-token steps
  // give: Batch::rows_as_steps); speculative verification (speculative.h). Throws InvalidArgument when they do not fit the room
  // left (room()); the caller shifts first.
  std::span<const float> feed_all(std::span<const int32_t> tokens);
  // Forgets every token past the first `n` of the cache (rejected drafts).
  void truncate(int64_t n);
  // Tokens that still fit before the sequence is full.
  int64_t room() const { return n_cells_ - static_cast<int64_t>(cached_.size()); }

  // A context shift now; returns the tokens discarded.
  int64_t shift();
  bool full() const { return static_cast<int64_t>(cached_.size()) >= n_cells_; }
  int64_t n_cells() const { return n_cells_; }
  bool context_shift() const { return params_.context_shift; }
  int seq() const { return params_.seq; }
  // Tokens in the cache, position order.
  const std::vector<int32_t>& cached() const { return cached_; }
  // Every token the sequence continued, shifted-out ones included.
  const std::vector<int32_t>& history() const { return history_; }
  // Tokens the shifts dropped, in all.
  int64_t n_dropped() const { return dropped_; }

  // Forgets everything (the cache sequence too).
  void clear();
  // The cache now holds exactly `tokens` (a restored state).
  void assume(std::vector<int32_t> tokens);

 private:
  // Evaluates `tokens` after the cached ones in chunks; false when interrupted.
  bool evaluate(std::span<const int32_t> tokens, const std::atomic<bool>* interrupt, std::span<const float>& logits,
                int64_t& done);
  int64_t keep_for(int64_t n_tokens) const;

  Context& ctx_;
  SequenceParams params_;
  int64_t n_cells_ = 0;
  std::vector<int32_t> cached_;   // the cache's tokens, position order
  std::vector<int32_t> history_;  // cached_[0:keep_] + dropped tokens + cached_[keep_:]
  int64_t keep_ = 0;              // where the dropped part starts
  int64_t dropped_ = 0;
};

}  // namespace ferrite::runtime
