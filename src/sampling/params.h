// The sampler chain's configuration: one field per llama.cpp command-line
// option (the option is named beside each field), with llama.cpp's defaults.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/penalties.h"
#include "sampling/rng.h"

namespace ferrite::sampling {

// The stages that --samplers orders. Logit bias always runs first and the
// final draw (or mirostat) last; a constraint (grammar) runs before the chain.
enum class Stage {
  Penalties,    // "penalties", char 'e'
  Dry,          // "dry", 'd'
  TopNSigma,    // "top_n_sigma", 's'
  TopK,         // "top_k", 'k'
  TypicalP,     // "typ_p", 'y'
  TopP,         // "top_p", 'p'
  MinP,         // "min_p", 'm'
  Xtc,          // "xtc", 'x'
  Temperature,  // "temperature", 't' (dynamic when dynatemp_range > 0)
};

// llama.cpp's default order: penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature.
std::vector<Stage> default_stage_order();

struct SamplerParams {
  float temperature = 0.8f;          // --temp; <= 0: greedy
  int32_t top_k = 40;                // --top-k; <= 0: all tokens
  float top_p = 0.95f;               // --top-p; >= 1: off
  uint64_t seed = kRandomSeed;       // --seed; kRandomSeed (-1 on the command line): random
  float min_p = 0.05f;               // --min-p; 0: off
  float typical_p = 1.0f;            // --typical; 1: off
  float top_n_sigma = -1.0f;         // --top-nsigma; <= 0: off
  float xtc_probability = 0.0f;      // --xtc-probability; 0: off
  float xtc_threshold = 0.1f;        // --xtc-threshold; > 0.5: off
  float dynatemp_range = 0.0f;       // --dynatemp-range; 0: off
  float dynatemp_exponent = 1.0f;    // --dynatemp-exp
  int32_t min_keep = 0;              // --min-keep
  int32_t penalty_last_n = 64;       // --repeat-last-n; 0: off, -1: context size
  float penalty_repeat = 1.0f;       // --repeat-penalty; 1: off
  float penalty_freq = 0.0f;         // --frequency-penalty
  float penalty_present = 0.0f;      // --presence-penalty
  bool penalize_nl = true;           // --penalize-nl / --no-penalize-nl (newer llama.cpp always penalizes)
  float dry_multiplier = 0.0f;       // --dry-multiplier; 0: off
  float dry_base = 1.75f;            // --dry-base
  int32_t dry_allowed_length = 2;    // --dry-allowed-length
  int32_t dry_penalty_last_n = 64;   // --dry-penalty-last-n; 0: off, -1: context size
  std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};  // --dry-sequence-breaker
  int32_t mirostat = 0;              // --mirostat: 0 off, 1 or 2 (replaces the stages)
  float mirostat_tau = 5.0f;         // --mirostat-ent
  float mirostat_eta = 0.1f;         // --mirostat-lr
  std::vector<Stage> samplers = default_stage_order();  // --samplers / --sampling-seq
  std::vector<LogitBias> logit_bias;  // --logit-bias ID(+/-)BIAS, repeatable
};

// Throws InvalidArgument naming the option for a value that makes no sense
// (NaN, mirostat not 0/1/2, a window below -1, negative min-keep or allowed
// length, a DRY base below 1).
void validate(const SamplerParams& params);

// Stage names: the canonical ones above, and llama.cpp's alternatives
// ("top-k", "top-p", "nucleus", "typical-p", "typical", "typ-p", "typ",
// "min-p", "temp", "top-n-sigma"). Throws InvalidArgument for others.
Stage stage_from_name(std::string_view name);
const char* stage_name(Stage s);
char stage_char(Stage s);

// "top_k;top_p;temperature" (--samplers): names separated by ';' (empty
// parts ignored).
std::vector<Stage> parse_stage_names(std::string_view list);
// "kpt" (--sampling-seq): one character per stage.
std::vector<Stage> parse_stage_chars(std::string_view chars);

// "15043+1", "15043-1.5", "2-inf" (--logit-bias). Throws InvalidArgument.
LogitBias parse_logit_bias(std::string_view text);

// "-1" means kRandomSeed; otherwise a decimal in [0, 2^64). Throws
// InvalidArgument.
uint64_t parse_seed(std::string_view text);

}  // namespace ferrite::sampling
