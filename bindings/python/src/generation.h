// One completion over a Session: the sampler chain (with an optional
// grammar constraint), streaming detokenization, stop strings, log-probs.
// Python drives it one step at a time (streaming) or runs it whole; either
// way KeyboardInterrupt is checked between tokens, with the GIL held, and the
// model runs with the GIL released.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sampling/sampler.h"
#include "server/grammar_constraint.h"
#include "server/stop_strings.h"
#include "session.h"
#include "tokenizer/stream_decoder.h"

namespace ferrite::python {

struct GenerationParams {
  sampling::SamplerParams sampling;
  int64_t max_tokens = 16;          // < 0: until the context is full
  std::vector<std::string> stop;    // stop strings (cut from the text)
  std::string grammar;              // GBNF; empty: unconstrained
  int n_logprobs = -1;              // < 0: none; else top alternatives per token
  bool ignore_eos = false;          // go on past end-of-generation tokens
};

// What one step produced.
struct Step {
  int32_t token = -1;       // the sampled token; -1 when the step only ended the generation
  std::string piece;        // the token's bytes
  std::string text;         // text that may be shown now (whole UTF-8, stop strings cut)
  float logprob = 0.0f;     // log p(token) under the raw logits
  std::vector<std::pair<int32_t, float>> top;  // best alternatives (n_logprobs of them)
  std::string finish;       // "" while generating, else "stop" or "length"
};

class Generation {
 public:
  // Evaluates the prompt (reusing the session's cache). Throws
  // InvalidArgument for bad parameters, grammars or prompts.
  Generation(std::shared_ptr<Session> session, const std::vector<int32_t>& prompt, GenerationParams params);

  // The next token (or the end). Throws error_already_set for a pending
  // KeyboardInterrupt, InvalidArgument when the session was used by another
  // generation meanwhile or after the end.
  Step step();

  bool done() const { return done_; }
  int64_t n_prompt() const { return n_prompt_; }
  int64_t n_generated() const { return n_generated_; }
  uint64_t seed() const { return sampler_.seed(); }

 private:
  Step finish(Step s, const char* reason);

  std::shared_ptr<Session> session_;
  GenerationParams params_;
  sampling::Sampler sampler_;
  std::shared_ptr<server::GrammarConstraint> constraint_;
  tokenizer::StreamDecoder decoder_;
  server::StopStrings stops_;
  std::span<const float> logits_;
  uint64_t epoch_ = 0;
  int64_t n_prompt_ = 0;
  int64_t n_generated_ = 0;
  bool done_ = false;
};

}  // namespace ferrite::python
