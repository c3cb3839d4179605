// The sampler parameters as every surface names them: one row per parameter
// with its accepted range, its command-line flags (llama.cpp's spellings),
// its JSON field (llama.cpp server's names; also the Python keyword) and
// where it lives in SamplerParams (whose initial value is the default).
// tools/ builds the command-line options from it, the server reads request
// bodies with it and the Python binding reads keyword arguments with it, so
// every sampler is reachable from each surface and checked the same way.
//
//   for (const ParamSpec& s : param_table()) ...
//   set_param(params, *find_param("top_k"), int64_t{20});   // InvalidField when out of range
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sampling/params.h"

namespace ferrite::sampling {

enum class ParamKind {
  Float,        // a number in [lo, hi]
  Int,          // an integer in [lo, hi]
  Bool,
  Seed,         // -1 (random) or an integer in [0, 2^64)
  Samplers,     // stage names: a list, or one string separated by ';'
  SamplerChars, // one character per stage ("kpt")
  LogitBias,    // (token, bias) pairs; a bias <= lo bans the token; the command line takes "ID+BIAS"
  Breakers,     // DRY sequence breakers: strings ("none" on the command line: no breakers)
};

using FieldRef = std::variant<std::monostate, float SamplerParams::*, int32_t SamplerParams::*, bool SamplerParams::*>;

struct ParamSpec {
  const char* name;   // JSON field and Python keyword: "top_k"
  const char* flags;  // command-line names as CLI11 declares them: "--top-k"
  const char* help;
  ParamKind kind;
  double lo = 0.0, hi = 0.0;  // Float, Int, LogitBias (the bias): accepted values, inclusive
  FieldRef field = {};        // Float, Int, Bool: the SamplerParams member
};

// Every sampler parameter, in the order --help lists them.
std::span<const ParamSpec> param_table();

// The row whose name is `name`, or nullptr.
const ParamSpec* find_param(std::string_view name);

// A value as a surface hands it over (the surface converts its own types:
// JSON numbers, Python ints, command-line text).
using ParamValue =
    std::variant<bool, int64_t, double, std::string, std::vector<std::string>, std::vector<LogitBias>>;

// Sets the parameter, checking its type and range. Throws InvalidField
// (field = spec.name) naming the parameter and the accepted values. A string
// is parsed the way the command line writes the value ("0.5", "-1",
// "15043+1", "top_k;temperature"). Breakers replace the defaults; a
// breaker "none" drops those before it (the command line's way to give none).
void set_param(SamplerParams& p, const ParamSpec& spec, const ParamValue& value);

// The current value of a Float, Int or Bool parameter as text ("0.95", "40",
// "true"); of the others, a readable form.
std::string param_text(const SamplerParams& p, const ParamSpec& spec);

// "[0, 1]" for a Float/Int row.
std::string range_text(const ParamSpec& spec);

}  // namespace ferrite::sampling
