// Whether a draft model's vocabulary can stand in for the target's: the
// checks llama.cpp makes before speculative decoding.
#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "runtime/drafter.h"

namespace ferrite::runtime {
namespace {

constexpr int32_t kMaxSizeDifference = 128;  // llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE
constexpr int32_t kFirstCheckedId = 5;       // ids below are specials that may differ

void same_id(const char* what, int32_t target, int32_t draft) {
  if (target != draft) {
    throw InvalidArgument(std::string("the draft model's ") + what + " token (" + std::to_string(draft) +
                          ") differs from the target's (" + std::to_string(target) + ")");
  }
}

}  // namespace

void check_draft_vocab(const tokenizer::Tokenizer& target, const tokenizer::Tokenizer& draft) {
  const tokenizer::Vocab& t = target.vocab();
  const tokenizer::Vocab& d = draft.vocab();
  if (t.kind != d.kind || t.model_name != d.model_name) {
    throw InvalidArgument("the draft model's tokenizer (" + d.model_name + ") differs from the target's (" +
                          t.model_name + ")");
  }
  if (t.add_bos != d.add_bos) throw InvalidArgument("the draft model adds BOS differently from the target");
  same_id("BOS", t.bos, d.bos);
  same_id("EOS", t.eos, d.eos);
  same_id("EOT", t.eot, d.eot);
  if (std::abs(t.n_vocab() - d.n_vocab()) > kMaxSizeDifference) {
    throw InvalidArgument("the draft model's vocabulary (" + std::to_string(d.n_vocab()) +
                          " tokens) differs from the target's (" + std::to_string(t.n_vocab()) + ") by more than " +
                          std::to_string(kMaxSizeDifference));
  }
  const int32_t n = std::min(t.n_vocab(), d.n_vocab());
  for (int32_t id = kFirstCheckedId; id < n; ++id) {
    if (t.text[static_cast<size_t>(id)] != d.text[static_cast<size_t>(id)]) {
      throw InvalidArgument("token " + std::to_string(id) + " is '" + d.text[static_cast<size_t>(id)] +
                            "' in the draft model but '" + t.text[static_cast<size_t>(id)] + "' in the target");
    }
  }
}

}  // namespace ferrite::runtime
