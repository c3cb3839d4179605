#include "sampling/params.h"

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace ferrite::sampling {
namespace {

struct StageInfo {
  Stage stage;
  const char* name;
  char chr;
};

constexpr StageInfo kStages[] = {
    {Stage::Penalties, "penalties", 'e'}, {Stage::Dry, "dry", 'd'},
    {Stage::TopNSigma, "top_n_sigma", 's'}, {Stage::TopK, "top_k", 'k'},
    {Stage::TypicalP, "typ_p", 'y'},       {Stage::TopP, "top_p", 'p'},
    {Stage::MinP, "min_p", 'm'},           {Stage::Xtc, "xtc", 'x'},
    {Stage::Temperature, "temperature", 't'},
};

struct AltName {
  const char* name;
  Stage stage;
};

constexpr AltName kAltNames[] = {
    {"top-k", Stage::TopK},         {"top-p", Stage::TopP},         {"nucleus", Stage::TopP},
    {"typical-p", Stage::TypicalP}, {"typical", Stage::TypicalP},   {"typ-p", Stage::TypicalP},
    {"typ", Stage::TypicalP},       {"min-p", Stage::MinP},         {"temp", Stage::Temperature},
    {"top-n-sigma", Stage::TopNSigma},
};

void check_number(float v, const char* option) {
  if (std::isnan(v)) throw InvalidArgument(std::string(option) + " is NaN");
}

void check_window(int32_t v, const char* option) {
  if (v < -1) throw InvalidArgument(std::string(option) + " must be >= -1 (-1: context size), got " + std::to_string(v));
}

}  // namespace

std::vector<Stage> default_stage_order() {
  return {Stage::Penalties, Stage::Dry,  Stage::TopNSigma, Stage::TopK,       Stage::TypicalP,
          Stage::TopP,      Stage::MinP, Stage::Xtc,       Stage::Temperature};
}

void validate(const SamplerParams& p) {
  check_number(p.temperature, "--temp");
  check_number(p.top_p, "--top-p");
  check_number(p.min_p, "--min-p");
  check_number(p.typical_p, "--typical");
  check_number(p.top_n_sigma, "--top-nsigma");
  check_number(p.xtc_probability, "--xtc-probability");
  check_number(p.xtc_threshold, "--xtc-threshold");
  check_number(p.dynatemp_range, "--dynatemp-range");
  check_number(p.dynatemp_exponent, "--dynatemp-exp");
  check_number(p.penalty_repeat, "--repeat-penalty");
  check_number(p.penalty_freq, "--frequency-penalty");
  check_number(p.penalty_present, "--presence-penalty");
  check_number(p.dry_multiplier, "--dry-multiplier");
  check_number(p.dry_base, "--dry-base");
  check_number(p.mirostat_tau, "--mirostat-ent");
  check_number(p.mirostat_eta, "--mirostat-lr");
  check_window(p.penalty_last_n, "--repeat-last-n");
  check_window(p.dry_penalty_last_n, "--dry-penalty-last-n");
  if (p.min_keep < 0) throw InvalidArgument("--min-keep must be >= 0, got " + std::to_string(p.min_keep));
  if (p.dry_allowed_length < 0) {
    throw InvalidArgument("--dry-allowed-length must be >= 0, got " + std::to_string(p.dry_allowed_length));
  }
  if (p.dry_base < 1.0f) throw InvalidArgument("--dry-base must be >= 1, got " + std::to_string(p.dry_base));
  if (p.mirostat < 0 || p.mirostat > 2) {
    throw InvalidArgument("--mirostat must be 0, 1 or 2, got " + std::to_string(p.mirostat));
  }
  for (const LogitBias& b : p.logit_bias) {
    if (b.token < 0) throw InvalidArgument("--logit-bias: negative token id " + std::to_string(b.token));
    if (std::isnan(b.bias)) throw InvalidArgument("--logit-bias: bias is NaN");
  }
}

Stage stage_from_name(std::string_view name) {
  for (const StageInfo& s : kStages) {
    if (name == s.name) return s.stage;
  }
  for (const AltName& a : kAltNames) {
    if (name == a.name) return a.stage;
  }
  std::string known;
  for (const StageInfo& s : kStages) known += std::string(known.empty() ? "" : ", ") + s.name;
  throw InvalidArgument("unknown sampler '" + std::string(name) + "' (known: " + known + ")");
}

const char* stage_name(Stage s) {
  for (const StageInfo& i : kStages) {
    if (i.stage == s) return i.name;
  }
  return "?";
}

char stage_char(Stage s) {
  for (const StageInfo& i : kStages) {
    if (i.stage == s) return i.chr;
  }
  return '?';
}

std::vector<Stage> parse_stage_names(std::string_view list) {
  std::vector<Stage> out;
  while (!list.empty()) {
    const size_t end = list.find(';');
    const std::string_view part = list.substr(0, end);
    if (!part.empty()) out.push_back(stage_from_name(part));
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
  return out;
}

std::vector<Stage> parse_stage_chars(std::string_view chars) {
  std::vector<Stage> out;
  for (char c : chars) {
    bool found = false;
    for (const StageInfo& s : kStages) {
      if (s.chr == c) {
        out.push_back(s.stage);
        found = true;
        break;
      }
    }
    if (!found) throw InvalidArgument(std::string("unknown sampler character '") + c + "' (known: edskypmxt)");
  }
  return out;
}

LogitBias parse_logit_bias(std::string_view text) {
  const std::string s(text);
  auto bad = [&]() { return InvalidArgument("--logit-bias: expected TOKEN_ID(+/-)BIAS, got '" + s + "'"); };
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i >= s.size() || (s[i] != '+' && s[i] != '-') || i + 1 >= s.size()) throw bad();
  errno = 0;
  const long long id = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE || id > INT32_MAX) throw bad();
  const char* start = s.c_str() + i + 1;
  if (*start == '+' || *start == '-' || std::isspace(static_cast<unsigned char>(*start))) throw bad();
  char* end = nullptr;
  const float magnitude = std::strtof(start, &end);
  if (end != s.c_str() + s.size() || std::isnan(magnitude)) throw bad();
  return {static_cast<int32_t>(id), s[i] == '-' ? -magnitude : magnitude};
}

uint64_t parse_seed(std::string_view text) {
  const std::string s(text);
  if (s == "-1") return kRandomSeed;
  if (s.empty() || s[0] < '0' || s[0] > '9') throw InvalidArgument("--seed: expected -1 or a non-negative integer, got '" + s + "'");
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno == ERANGE || end != s.c_str() + s.size()) {
    throw InvalidArgument("--seed: expected -1 or an integer below 2^64, got '" + s + "'");
  }
  return v;
}

}  // namespace ferrite::sampling
