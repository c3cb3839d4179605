// One completion over a Session: the runtime's generation step
// (runtime/generation.h: sampler chain, grammar, streaming detokenization,
// stop strings, log-probs) on the session's sequence. Python drives it one
// step at a time (streaming) or runs it whole; either way KeyboardInterrupt
// is checked between tokens, with the GIL held, and the step (sampling and
// the model) runs with the GIL released.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "runtime/generation.h"
#include "session.h"

namespace ferrite::python {

// What one step produced.
struct Step {
  int32_t token = -1;       // the sampled token; -1 when the step only ended the generation
  std::string piece;        // the token's bytes
  std::string text;         // text that may be shown now (whole UTF-8, stop strings cut)
  float logprob = 0.0f;     // log p(token) under the raw logits
  std::vector<std::pair<int32_t, float>> top;  // best alternatives (n_probs of them)
  std::string finish;       // "" while generating, else "stop" or "length"
};

class Generation {
 public:
  // Evaluates the prompt (reusing the session's cache). Throws
  // InvalidArgument for bad parameters, grammars or prompts.
  // `params.n_predict` < 0: until the context is full.
  Generation(std::shared_ptr<Session> session, const std::vector<int32_t>& prompt, runtime::GenerationParams params);

  // The next token (or the end). Throws error_already_set for a pending
  // KeyboardInterrupt, InvalidArgument when the session was used by another
  // generation meanwhile or after the end.
  Step step();

  bool done() const { return gen_.done(); }
  int64_t n_prompt() const { return n_prompt_; }
  int64_t n_generated() const { return gen_.n_generated(); }
  uint64_t seed() const { return gen_.seed(); }
  // With parse_tool_calls, after the end: (content, [(name, arguments)]).
  const chat::ParsedReply& reply() const { return gen_.reply(); }

 private:
  std::shared_ptr<Session> session_;
  runtime::Generation gen_;
  std::span<const float> logits_;
  uint64_t epoch_ = 0;
  int64_t n_prompt_ = 0;
};

}  // namespace ferrite::python
