#include "generation.h"

#include <pybind11/pybind11.h>

#include "core/error.h"

namespace ferrite::python {
namespace py = pybind11;

Generation::Generation(std::shared_ptr<Session> session, const std::vector<int32_t>& prompt,
                       runtime::GenerationParams params)
    : session_(std::move(session)),
      gen_(session_->vocab(), std::move(params),
           {.n_ctx = static_cast<int32_t>(session_->context().n_ctx()),
            .n_ctx_train = static_cast<int32_t>(session_->model().hparams().n_ctx_train)},
           prompt) {
  Session::Busy busy(*session_);
  epoch_ = session_->next_epoch();
  logits_ = session_->prefill(prompt);
  n_prompt_ = static_cast<int64_t>(prompt.size());
}

Step Generation::step() {
  if (gen_.done()) throw InvalidArgument("this generation has ended");
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  if (session_->epoch() != epoch_) {
    gen_.end(runtime::FinishReason::kInterrupted);
    throw InvalidArgument("this generation was interrupted: the Llama was used by another call meanwhile");
  }
  Session::Busy busy(*session_);
  runtime::GenerationStep s;
  {
    py::gil_scoped_release nogil;
    const std::lock_guard<std::mutex> lock(session_->cache_mutex());
    s = session_->sequence().step(gen_, logits_);
  }
  if (s.needs_eval()) session_->count_evaluated(1);
  Step out;
  out.token = s.token;
  if (s.token >= 0) out.piece = session_->tokenizer().token_to_piece(s.token, false);
  out.text = std::move(s.text);
  if (s.has_logprob) {
    out.logprob = s.logprob.logprob;
    out.top = std::move(s.logprob.top);
  }
  if (s.finish != runtime::FinishReason::kNone) out.finish = runtime::openai_finish_reason(s.finish);
  return out;
}

}  // namespace ferrite::python
