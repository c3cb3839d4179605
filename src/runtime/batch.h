// A batch of tokens to evaluate: each with its position, its sequence and
// whether its logits are wanted.
#pragma once

#include <cstdint>
#include <vector>

namespace ferrite::runtime {

struct Batch {
  std::vector<int32_t> tokens;
  std::vector<int32_t> pos;
  std::vector<int32_t> seq;
  std::vector<uint8_t> want_logits;
  // Each token's type (segment id), for encoders with a token type table
  // (model::HParams::n_token_types; a cross-encoder's document is type 1:
  // tokenizer/rank_pair.h); empty: every token type 0.
  std::vector<int32_t> types;
  // Each row evaluated as its own one-token step would be, bit for bit
  // (backend/step.h ForwardBatch::rows_as_steps): speculative verification.
  bool rows_as_steps = false;

  void add(int32_t token, int32_t position, int32_t sequence, bool logits) {
    tokens.push_back(token);
    pos.push_back(position);
    seq.push_back(sequence);
    want_logits.push_back(logits ? 1 : 0);
    if (!types.empty()) types.push_back(0);
  }
  // A token of the given type (the tokens before it, if untyped, type 0).
  void add(int32_t token, int32_t position, int32_t sequence, bool logits, int32_t type) {
    if (types.empty() && type != 0) types.assign(tokens.size(), 0);
    add(token, position, sequence, logits);
    if (!types.empty()) types.back() = type;
  }
  void clear() {
    tokens.clear();
    pos.clear();
    seq.clear();
    want_logits.clear();
    types.clear();
    rows_as_steps = false;
  }
  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

}  // namespace ferrite::runtime
