#include "runtime/generation.h"

#include "core/error.h"
#include "sampling/logprobs.h"

namespace ferrite::runtime {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kNone: return "";
    case FinishReason::kEndOfGeneration: return "eog";
    case FinishReason::kStopString: return "stop";
    case FinishReason::kGrammar: return "grammar";
    case FinishReason::kLength: return "length";
    case FinishReason::kContextFull: return "context";
    case FinishReason::kInterrupted: return "interrupted";
  }
  return "";
}

const char* openai_finish_reason(FinishReason r) {
  return r == FinishReason::kLength || r == FinishReason::kContextFull ? "length" : "stop";
}

GenerationVocab::GenerationVocab(const tokenizer::Tokenizer& tok) : tok_(tok) {
  const std::vector<int32_t> nl = tok.encode("\n", false, false);
  if (nl.size() == 1) newline_ = nl[0];
}

std::shared_ptr<const VocabPieces> GenerationVocab::grammar_pieces() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!pieces_) pieces_ = build_vocab_pieces(tok_);
  return pieces_;
}

sampling::ModelInfo GenerationVocab::sampling_info(const sampling::SamplerParams& params,
                                                   const GenerationContext& c) const {
  sampling::ModelInfo info;
  info.n_vocab = tok_.n_vocab();
  info.n_ctx = c.n_ctx;
  info.n_ctx_train = c.n_ctx_train;
  info.newline_token = newline_;
  const bool dry = params.dry_multiplier != 0.0f && params.dry_penalty_last_n != 0;
  if (dry && !params.dry_sequence_breakers.empty()) {
    info.text.pieces.reserve(static_cast<size_t>(info.n_vocab));
    for (int32_t id = 0; id < info.n_vocab; ++id) info.text.pieces.push_back(tok_.token_to_piece(id, true));
    info.text.tokenize = [this](std::string_view s) { return tok_.encode(s, false, false); };
  }
  return info;
}

namespace {

sampling::Sampler make_sampler(GenerationVocab& vocab, const GenerationParams& p, const GenerationContext& c) {
  return sampling::Sampler(p.sampling, vocab.sampling_info(p.sampling, c));
}

}  // namespace

Generation::Generation(GenerationVocab& vocab, GenerationParams params, const GenerationContext& context,
                       std::span<const int32_t> prompt)
    : tok_(&vocab.tokenizer()),
      params_(std::move(params)),
      sampler_(make_sampler(vocab, params_, context)),
      decoder_(vocab.tokenizer()),
      stops_(params_.stop) {
  const int32_t n_vocab = tok_->n_vocab();
  for (int32_t t : prompt) {
    if (t < 0 || t >= n_vocab) {
      throw InvalidArgument("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                            std::to_string(n_vocab - 1) + ")");
    }
  }
  if (!params_.grammar.empty()) {
    constraint_ = std::make_shared<GrammarConstraint>(params_.grammar, vocab.grammar_pieces());
    sampler_.set_constraint(constraint_);
  }
  for (int32_t t : prompt) sampler_.accept(t, /*advance_constraint=*/false);
  decoder_.follow(prompt);
}

void Generation::emit(GenerationStep& s, const std::string& piece) {
  const std::string shown = stops_.push(piece);
  s.text += shown;
  if (params_.parse_tool_calls) text_ += shown;
}

GenerationStep Generation::finish_with(GenerationStep s, FinishReason why) {
  if (!stops_.stopped()) {
    emit(s, decoder_.flush());
    const std::string tail = stops_.flush();
    s.text += tail;
    if (params_.parse_tool_calls) text_ += tail;
  }
  if (stops_.stopped()) why = FinishReason::kStopString;
  finish_ = why;
  s.finish = why;
  if (params_.parse_tool_calls) reply_ = chat::parse_tool_calls(text_);
  return s;
}

GenerationStep Generation::end(FinishReason why) {
  if (done()) throw InvalidArgument("this generation has ended");
  return finish_with(GenerationStep{}, why);
}

GenerationStep Generation::next(std::span<const float> logits) {
  if (done()) throw InvalidArgument("this generation has ended");
  GenerationStep s;
  if (params_.interrupt != nullptr && params_.interrupt->load()) return finish_with(std::move(s), FinishReason::kInterrupted);
  if (params_.n_predict >= 0 && n_generated_ >= params_.n_predict) return finish_with(std::move(s), FinishReason::kLength);
  if (constraint_ && constraint_->finished()) return finish_with(std::move(s), FinishReason::kGrammar);
  int32_t token = -1;
  try {
    token = sampler_.sample(logits);
  } catch (const InvalidArgument&) {
    if (!constraint_) throw;
    return finish_with(std::move(s), FinishReason::kGrammar);  // the grammar admits no token here
  }
  if (params_.n_probs >= 0) {
    s.logprob.logprob = sampling::token_logprob(logits, token, &s.logprob.top, params_.n_probs);
    s.has_logprob = true;
  }
  if (tok_->is_eog(token) && !params_.ignore_eos) return finish_with(std::move(s), FinishReason::kEndOfGeneration);
  ++n_generated_;
  s.token = token;
  emit(s, decoder_.push(token));
  if (stops_.stopped()) return finish_with(std::move(s), FinishReason::kStopString);
  if (params_.n_predict >= 0 && n_generated_ >= params_.n_predict) return finish_with(std::move(s), FinishReason::kLength);
  if (constraint_ && constraint_->finished()) return finish_with(std::move(s), FinishReason::kGrammar);
  return s;
}

}  // namespace ferrite::runtime
