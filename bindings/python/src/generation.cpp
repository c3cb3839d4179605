#include "generation.h"

#include <pybind11/pybind11.h>

#include "core/error.h"
#include "server/logprobs.h"

namespace ferrite::python {
namespace py = pybind11;
namespace {

sampling::ModelInfo model_info(Session& s) {
  sampling::ModelInfo info;
  info.n_vocab = s.tokenizer().n_vocab();
  info.n_ctx = static_cast<int32_t>(s.context().n_ctx());
  info.n_ctx_train = static_cast<int32_t>(s.model().hparams().n_ctx_train);
  return info;
}

}  // namespace

Generation::Generation(std::shared_ptr<Session> session, const std::vector<int32_t>& prompt,
                       GenerationParams params)
    : session_(std::move(session)),
      params_(std::move(params)),
      sampler_(params_.sampling, model_info(*session_)),
      decoder_(session_->tokenizer()),
      stops_(params_.stop) {
  decoder_.continue_text();  // as llama-cpp-python: the completion's first piece keeps its space
  if (!params_.grammar.empty()) {
    constraint_ = std::make_shared<server::GrammarConstraint>(params_.grammar, session_->vocab_pieces());
    sampler_.set_constraint(constraint_);
  }
  Session::Busy busy(*session_);
  epoch_ = session_->next_epoch();
  logits_ = session_->prefill(prompt);
  for (int32_t t : prompt) sampler_.accept(t, /*advance_constraint=*/false);
  n_prompt_ = static_cast<int64_t>(prompt.size());
}

Step Generation::finish(Step s, const char* reason) {
  s.text += stops_.push(decoder_.flush());
  s.text += stops_.flush();
  s.finish = stops_.stopped() ? "stop" : reason;
  done_ = true;
  return s;
}

Step Generation::step() {
  if (done_) throw InvalidArgument("this generation has ended");
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  if (session_->epoch() != epoch_) {
    done_ = true;
    throw InvalidArgument("this generation was interrupted: the Llama was used by another call meanwhile");
  }
  Session::Busy busy(*session_);
  Step s;
  if (params_.max_tokens >= 0 && n_generated_ >= params_.max_tokens) return finish(std::move(s), "length");
  if (static_cast<int64_t>(session_->cached_tokens().size()) >= session_->context().n_ctx()) {
    return finish(std::move(s), "length");
  }
  if (constraint_ && constraint_->finished()) return finish(std::move(s), "stop");
  int32_t token = -1;
  {
    py::gil_scoped_release nogil;
    try {
      token = sampler_.sample(logits_);
    } catch (const InvalidArgument&) {
      if (!constraint_) throw;
      token = -1;  // the grammar admits nothing more
    }
    if (token >= 0 && params_.n_logprobs >= 0) {
      s.logprob = server::token_logprob(logits_, token, &s.top, params_.n_logprobs);
    }
  }
  const tokenizer::Tokenizer& tok = session_->tokenizer();
  if (token < 0 || (tok.is_eog(token) && !params_.ignore_eos)) return finish(std::move(s), "stop");
  ++n_generated_;
  s.token = token;
  s.piece = tok.token_to_piece(token, false);
  s.text = stops_.push(decoder_.push(token));
  if (stops_.stopped()) return finish(std::move(s), "stop");
  if (params_.max_tokens >= 0 && n_generated_ >= params_.max_tokens) return finish(std::move(s), "length");
  if (static_cast<int64_t>(session_->cached_tokens().size()) >= session_->context().n_ctx()) {
    return finish(std::move(s), "length");
  }
  logits_ = session_->feed(token);
  return s;
}

}  // namespace ferrite::python
