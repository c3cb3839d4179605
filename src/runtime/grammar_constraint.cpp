#include "runtime/grammar_constraint.h"

#include <algorithm>
#include <limits>

namespace ferrite::runtime {

std::shared_ptr<const VocabPieces> build_vocab_pieces(const tokenizer::Tokenizer& tok) {
  auto v = std::make_shared<VocabPieces>();
  const int32_t n = tok.n_vocab();
  v->pieces.reserve(static_cast<size_t>(n));
  for (int32_t id = 0; id < n; ++id) {
    v->pieces.push_back(tok.is_control(id) ? std::string() : tok.token_to_piece(id, false));
    if (tok.is_eog(id)) v->eog.push_back(id);
  }
  v->trie = std::make_unique<grammar::TokenTrie>(v->pieces, v->eog);
  return v;
}

GrammarConstraint::GrammarConstraint(const std::string& gbnf, std::shared_ptr<const VocabPieces> vocab)
    : vocab_(std::move(vocab)),
      matcher_(std::make_shared<const grammar::Grammar>(grammar::Grammar::parse(gbnf))) {}

bool GrammarConstraint::is_eog(int32_t token) const {
  return std::find(vocab_->eog.begin(), vocab_->eog.end(), token) != vocab_->eog.end();
}

void GrammarConstraint::apply(std::span<sampling::Candidate> candidates) {
  const grammar::TokenMask& ok = matcher_.allowed(*vocab_->trie);
  for (sampling::Candidate& c : candidates) {
    const bool valid = c.id >= 0 && static_cast<size_t>(c.id) < ok.size() && ok.test(static_cast<size_t>(c.id));
    if (!valid) c.logit = -std::numeric_limits<float>::infinity();
  }
}

bool GrammarConstraint::allows(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab_->pieces.size()) return false;
  if (is_eog(token)) return matcher_.is_complete();
  return matcher_.allows(vocab_->pieces[static_cast<size_t>(token)]);
}

void GrammarConstraint::accept(int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= vocab_->pieces.size() || is_eog(token)) return;
  matcher_.accept_token(vocab_->pieces[static_cast<size_t>(token)]);
}

void GrammarConstraint::reset() { matcher_.reset(); }

}  // namespace ferrite::runtime
