// Drafters for speculative decoding (speculative.h): each proposes the tokens
// likely to follow a context, which the target model then verifies in one
// batch. A draft is a point mass (the drafter's single choice per position),
// so verifying it by sampling the target and comparing is the speculative-
// sampling rule itself (speculative.h explains).
//
//   NgramDrafter   prompt lookup (llama.cpp's "ngram-simple"): the last n
//                  tokens are looked up earlier in the context and the tokens
//                  that followed them there are proposed (ngram_drafter.cpp).
//   ModelDrafter   a small draft model with the target's vocabulary, run
//                  greedily in its own context; its cache follows the
//                  target's tokens, and tokens the target rejected are
//                  removed from it (model_drafter.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/sequence.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to `n_max` tokens that may follow `context` (every token so far, the
  // newest last). May return fewer, or none.
  virtual std::vector<int32_t> draft(std::span<const int32_t> context, int n_max) = 0;
  // "ngram-simple" or "draft".
  virtual const char* name() const = 0;
};

struct NgramParams {
  int size_n = 12;  // tokens looked up (llama.cpp's --spec-ngram-simple-size-n)
  int size_m = 48;  // tokens proposed at most (--spec-ngram-simple-size-m)
};

// Throws InvalidArgument for sizes below 1 or above 1024.
class NgramDrafter final : public Drafter {
 public:
  explicit NgramDrafter(NgramParams p);
  std::vector<int32_t> draft(std::span<const int32_t> context, int n_max) override;
  const char* name() const override { return "ngram-simple"; }

 private:
  NgramParams p_;
};

// The continuation of the latest earlier occurrence of the last `n` tokens
// of `context` (at most `n_max` tokens), or nothing.
std::vector<int32_t> ngram_lookup(std::span<const int32_t> context, int n, int n_max);

struct DraftModelParams {
  float p_min = 0.75f;  // stop drafting when the draft's best token is less likely than this (--draft-p-min)
  int seq = 0;          // the draft context's sequence this drafter uses (a server slot's id)
  int64_t n_cells = 0;  // cells that sequence may hold (0: the whole context)
};

class ModelDrafter final : public Drafter {
 public:
  // `ctx`: the draft model's own context (sequence p.seq of it); must
  // outlive the drafter. Throws InvalidArgument for p_min outside [0, 1].
  ModelDrafter(Context& ctx, DraftModelParams p);
  std::vector<int32_t> draft(std::span<const int32_t> context, int n_max) override;
  const char* name() const override { return "draft"; }

 private:
  Context& ctx_;
  Sequence seq_;
  DraftModelParams p_;
};

// Whether a draft model's vocabulary can stand in for the target's, as
// llama.cpp checks: the same tokenizer model, the same BOS/EOS/EOT and
// add-BOS, sizes within 128 of each other, and the same text for every
// shared id from 5 on. Throws InvalidArgument naming the first difference.
void check_draft_vocab(const tokenizer::Tokenizer& target, const tokenizer::Tokenizer& draft);

}  // namespace ferrite::runtime
