// The sampler's constraint stage over a grammar matcher: tokens whose text
// the grammar rejects are masked out; end-of-generation tokens are allowed
// only when the text so far is a complete sentence.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "grammar/matcher.h"
#include "grammar/token_trie.h"
#include "sampling/constraint.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::runtime {

// What every constraint of one vocabulary shares: pieces and the token trie.
struct VocabPieces {
  std::vector<std::string> pieces;  // [n_vocab] token bytes (control tokens empty)
  std::vector<int32_t> eog;         // end-of-generation ids
  std::unique_ptr<grammar::TokenTrie> trie;
};

// Builds the pieces (control tokens empty), end-of-generation ids and trie
// of a tokenizer's vocabulary.
std::shared_ptr<const VocabPieces> build_vocab_pieces(const tokenizer::Tokenizer& tok);

class GrammarConstraint : public sampling::Constraint {
 public:
  // Throws grammar::GrammarError (an InvalidArgument) for bad GBNF.
  GrammarConstraint(const std::string& gbnf, std::shared_ptr<const VocabPieces> vocab);

  void apply(std::span<sampling::Candidate> candidates) override;
  bool allows(int32_t token) override;
  void accept(int32_t token) override;
  void reset() override;

  // No further text can follow.
  bool finished() const { return matcher_.is_finished(); }

 private:
  bool is_eog(int32_t token) const;

  std::shared_ptr<const VocabPieces> vocab_;
  grammar::Matcher matcher_;
};

}  // namespace ferrite::runtime
