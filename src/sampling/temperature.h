// Temperature stages, as llama.cpp defines them.
#pragma once

#include "sampling/candidates.h"

namespace ferrite::sampling {

// logit /= t. t <= 0: greedy, only the best candidate (largest logit, lowest
// id among equals) stays.
void temperature(Candidates& c, float t);

// Dynamic temperature (entropy-based, "DynaTemp"). range <= 0: plain
// temperature(t). Otherwise, with n candidates (n <= 1: nothing to do), H the
// entropy of softmax(logits) and Hmax = ln n, the temperature is
//   T = t_min + (t_max - t_min) * (H / Hmax)^exponent,
//   t_min = max(0, t - range), t_max = t + range,
// and the logits are divided by T (T <= 0: greedy). Returns the temperature
// used (t for the plain case).
float dynamic_temperature(Candidates& c, float t, float range, float exponent);

}  // namespace ferrite::sampling
