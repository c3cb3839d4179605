// A constraint stage (a grammar, a JSON schema, a tool-call format...): it
// says which tokens may come next. The sampling module knows nothing of
// grammars; src/grammar (or the runtime) implements this interface.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "sampling/candidates.h"

namespace ferrite::sampling {

class Constraint {
 public:
  virtual ~Constraint() = default;

  // Sets the logit of every disallowed candidate to -inf; leaves the others
  // (and the order) untouched.
  virtual void apply(std::span<Candidate> candidates) = 0;

  // Whether `token` may come next. The default asks apply() about a single
  // candidate; implementations may answer faster.
  virtual bool allows(int32_t token) {
    Candidate c{token, 0.0f, 0.0f};
    apply({&c, 1});
    return c.logit != -std::numeric_limits<float>::infinity();
  }

  // `token` was chosen (or fed from the prompt): advance the state.
  virtual void accept(int32_t token) = 0;

  // Back to the initial state.
  virtual void reset() {}
};

}  // namespace ferrite::sampling
