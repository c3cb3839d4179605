#include "sampling/param_table.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"

namespace ferrite::sampling {
namespace {

constexpr double kMaxWindow = 1 << 20;     // token windows, top-k, lengths
constexpr double kMaxLogitBias = 100.0;    // |bias|; -100 bans the token (OpenAI's convention)

using P = SamplerParams;

// clang-format off
const ParamSpec kTable[] = {
    // OpenAI's documented range (the server's before the table).
    {"temperature", "--temp,--temperature", "temperature; 0: greedy", ParamKind::Float, 0, 2, &P::temperature},
    {"top_k", "--top-k", "top-k sampling (<= 0: all tokens)", ParamKind::Int, -1, kMaxWindow, &P::top_k},
    {"top_p", "--top-p", "top-p sampling (1.0 = disabled)", ParamKind::Float, 0, 1, &P::top_p},
    {"min_p", "--min-p", "min-p sampling (0.0 = disabled)", ParamKind::Float, 0, 1, &P::min_p},
    {"top_n_sigma", "--top-nsigma,--top-n-sigma", "top-n-sigma sampling (<= 0 = disabled)", ParamKind::Float, -1, 100,
     &P::top_n_sigma},
    {"xtc_probability", "--xtc-probability", "XTC probability (0.0 = disabled)", ParamKind::Float, 0, 1,
     &P::xtc_probability},
    {"xtc_threshold", "--xtc-threshold", "XTC threshold (> 0.5 = disabled)", ParamKind::Float, 0, 1, &P::xtc_threshold},
    {"typical_p", "--typical,--typical-p", "locally typical sampling, parameter p (1.0 = disabled)", ParamKind::Float, 0,
     1, &P::typical_p},
    {"min_keep", "--min-keep", "keep at least this many candidates in each cut (0 = 1)", ParamKind::Int, 0, kMaxWindow,
     &P::min_keep},
    {"repeat_last_n", "--repeat-last-n", "last n tokens to penalize (0 = disabled, -1 = context size)", ParamKind::Int,
     -1, kMaxWindow, &P::penalty_last_n},
    {"repeat_penalty", "--repeat-penalty", "repetition penalty (1.0 = disabled)", ParamKind::Float, 0, 10,
     &P::penalty_repeat},
    {"presence_penalty", "--presence-penalty", "presence penalty (0.0 = disabled)", ParamKind::Float, -2, 2,
     &P::penalty_present},
    {"frequency_penalty", "--frequency-penalty", "frequency penalty (0.0 = disabled)", ParamKind::Float, -2, 2,
     &P::penalty_freq},
    {"penalize_nl", "--penalize-nl,!--no-penalize-nl", "whether the penalties apply to the newline token",
     ParamKind::Bool, 0, 1, &P::penalize_nl},
    {"dry_multiplier", "--dry-multiplier", "DRY multiplier (0.0 = disabled)", ParamKind::Float, 0, 100,
     &P::dry_multiplier},
    {"dry_base", "--dry-base", "DRY base", ParamKind::Float, 1, 100, &P::dry_base},
    {"dry_allowed_length", "--dry-allowed-length", "DRY: repeats longer than this are penalized", ParamKind::Int, 0,
     kMaxWindow, &P::dry_allowed_length},
    {"dry_penalty_last_n", "--dry-penalty-last-n", "DRY: tokens scanned (0 = disabled, -1 = context size)",
     ParamKind::Int, -1, kMaxWindow, &P::dry_penalty_last_n},
    {"dry_sequence_breakers", "--dry-sequence-breaker",
     "DRY sequence breaker, repeatable; replaces the defaults ('\\n', ':', '\"', '*'); \"none\": no breakers",
     ParamKind::Breakers},
    {"dynatemp_range", "--dynatemp-range", "dynamic temperature range (0.0 = disabled)", ParamKind::Float, 0, 10,
     &P::dynatemp_range},
    {"dynatemp_exponent", "--dynatemp-exp", "dynamic temperature exponent", ParamKind::Float, 0, 100,
     &P::dynatemp_exponent},
    {"mirostat", "--mirostat", "Mirostat: 0 = disabled, 1 = Mirostat, 2 = Mirostat 2.0", ParamKind::Int, 0, 2,
     &P::mirostat},
    {"mirostat_eta", "--mirostat-lr", "Mirostat learning rate, eta", ParamKind::Float, 0, 10, &P::mirostat_eta},
    {"mirostat_tau", "--mirostat-ent", "Mirostat target entropy, tau", ParamKind::Float, 0, 100, &P::mirostat_tau},
    {"seed", "-s,--seed", "RNG seed (-1: a random seed)", ParamKind::Seed},
    {"samplers", "--samplers", "samplers in order, separated by ';'", ParamKind::Samplers},
    {"sampling_seq", "--sampling-seq,--sampler-seq", "samplers in order, one character each", ParamKind::SamplerChars},
    {"logit_bias", "-l,--logit-bias",
     "TOKEN_ID(+/-)BIAS, repeatable: e.g. 15043+1 makes token 15043 likelier, 15043-inf bans it",
     ParamKind::LogitBias, -kMaxLogitBias, kMaxLogitBias},
};
// clang-format on

std::string number_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

InvalidField bad(const ParamSpec& s, const std::string& why) {
  return InvalidField(s.name, std::string("'") + s.name + "' (" + s.flags + ") " + why);
}

// A number from any value a surface may give: a number, or command-line text.
double number_of(const ParamSpec& s, const ParamValue& v, bool integer) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) {
    if (integer && *d != std::floor(*d)) throw bad(s, "must be an integer");
    return *d;
  }
  if (const auto* t = std::get_if<std::string>(&v)) {
    char* end = nullptr;
    const double d = std::strtod(t->c_str(), &end);
    if (t->empty() || end != t->c_str() + t->size()) throw bad(s, "must be a number, got '" + *t + "'");
    if (integer && d != std::floor(d)) throw bad(s, "must be an integer, got '" + *t + "'");
    return d;
  }
  throw bad(s, integer ? "must be an integer" : "must be a number");
}

void set_number(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  const bool integer = s.kind == ParamKind::Int;
  const double d = number_of(s, v, integer);
  if (!(d >= s.lo && d <= s.hi)) throw bad(s, "must be in " + range_text(s) + ", got " + number_text(d));
  if (integer) {
    p.*std::get<int32_t P::*>(s.field) = static_cast<int32_t>(d);
  } else {
    p.*std::get<float P::*>(s.field) = static_cast<float>(d);
  }
}

void set_bool(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  bool b = false;
  if (const auto* x = std::get_if<bool>(&v)) {
    b = *x;
  } else if (const auto* t = std::get_if<std::string>(&v); t && (*t == "true" || *t == "1" || *t == "false" || *t == "0")) {
    b = *t == "true" || *t == "1";
  } else {
    throw bad(s, "must be a boolean");
  }
  p.*std::get<bool P::*>(s.field) = b;
}

void set_seed(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    if (*i < -1) throw bad(s, "must be -1 (random) or a non-negative integer");
    p.seed = *i == -1 ? kRandomSeed : static_cast<uint64_t>(*i);
    return;
  }
  if (const auto* t = std::get_if<std::string>(&v)) {
    try {
      p.seed = parse_seed(*t);
    } catch (const InvalidArgument& e) {
      throw bad(s, e.what());
    }
    return;
  }
  throw bad(s, "must be an integer");
}

void set_samplers(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  try {
    if (const auto* t = std::get_if<std::string>(&v)) {
      p.samplers = s.kind == ParamKind::SamplerChars ? parse_stage_chars(*t) : parse_stage_names(*t);
      return;
    }
    if (const auto* list = std::get_if<std::vector<std::string>>(&v); list && s.kind == ParamKind::Samplers) {
      std::vector<Stage> out;
      for (const std::string& name : *list) out.push_back(stage_from_name(name));
      p.samplers = std::move(out);
      return;
    }
  } catch (const InvalidArgument& e) {
    throw bad(s, e.what());
  }
  throw bad(s, s.kind == ParamKind::SamplerChars ? "must be a string" : "must be a list of sampler names");
}

void set_logit_bias(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  std::vector<LogitBias> biases;
  if (const auto* t = std::get_if<std::string>(&v)) {
    try {
      biases.push_back(parse_logit_bias(*t));
    } catch (const InvalidArgument& e) {
      throw bad(s, e.what());
    }
  } else if (const auto* list = std::get_if<std::vector<LogitBias>>(&v)) {
    biases = *list;
    p.logit_bias.clear();  // a list replaces; command-line entries add up
  } else {
    throw bad(s, "must map token ids to biases");
  }
  for (LogitBias& b : biases) {
    if (b.token < 0) throw bad(s, "has a negative token id " + std::to_string(b.token));
    if (std::isnan(b.bias)) throw bad(s, "has a NaN bias");
    if (std::isinf(b.bias)) {
      if (b.bias > 0) throw bad(s, "has an infinite bias (only -inf, which bans the token)");
    } else if (!(b.bias >= s.lo && b.bias <= s.hi)) {
      throw bad(s, "biases must be in " + range_text(s) + " (" + number_text(s.lo) + " bans the token), got " +
                       number_text(b.bias));
    }
    if (b.bias <= s.lo) b.bias = -std::numeric_limits<float>::infinity();
    p.logit_bias.push_back(b);
  }
}

void set_breakers(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  std::vector<std::string> list;
  if (const auto* t = std::get_if<std::string>(&v)) {
    list = {*t};
  } else if (const auto* l = std::get_if<std::vector<std::string>>(&v)) {
    list = *l;
  } else {
    throw bad(s, "must be a list of strings");
  }
  p.dry_sequence_breakers.clear();
  for (const std::string& b : list) {
    if (b == "none") {
      p.dry_sequence_breakers.clear();
    } else {
      p.dry_sequence_breakers.push_back(b);
    }
  }
}

}  // namespace

std::span<const ParamSpec> param_table() { return kTable; }

const ParamSpec* find_param(std::string_view name) {
  for (const ParamSpec& s : kTable) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

std::string range_text(const ParamSpec& s) {
  std::string out("[");
  out += number_text(s.lo);
  out += ", ";
  out += number_text(s.hi);
  out += ']';
  return out;
}

void set_param(SamplerParams& p, const ParamSpec& s, const ParamValue& v) {
  switch (s.kind) {
    case ParamKind::Float:
    case ParamKind::Int: set_number(p, s, v); return;
    case ParamKind::Bool: set_bool(p, s, v); return;
    case ParamKind::Seed: set_seed(p, s, v); return;
    case ParamKind::Samplers:
    case ParamKind::SamplerChars: set_samplers(p, s, v); return;
    case ParamKind::LogitBias: set_logit_bias(p, s, v); return;
    case ParamKind::Breakers: set_breakers(p, s, v); return;
  }
}

std::string param_text(const SamplerParams& p, const ParamSpec& s) {
  switch (s.kind) {
    case ParamKind::Float: return number_text(p.*std::get<float P::*>(s.field));
    case ParamKind::Int: return std::to_string(p.*std::get<int32_t P::*>(s.field));
    case ParamKind::Bool: return p.*std::get<bool P::*>(s.field) ? "true" : "false";
    case ParamKind::Seed: return p.seed == kRandomSeed ? "-1" : std::to_string(p.seed);
    case ParamKind::Samplers: {
      std::string out;
      for (Stage st : p.samplers) out += std::string(out.empty() ? "" : ";") + stage_name(st);
      return out;
    }
    case ParamKind::SamplerChars: {
      std::string out;
      for (Stage st : p.samplers) out += stage_char(st);
      return out;
    }
    case ParamKind::LogitBias: return std::to_string(p.logit_bias.size()) + " biases";
    case ParamKind::Breakers: {
      std::string out;
      for (const std::string& b : p.dry_sequence_breakers) {
        std::string shown;
        for (char c : b) shown += c == '\n' ? std::string("\\n") : std::string(1, c);
        out += std::string(out.empty() ? "" : ", ") + "'" + shown + "'";
      }
      return out;
    }
  }
  return "";
}

}  // namespace ferrite::sampling
