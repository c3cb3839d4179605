#include "sampling_options.h"

#include <string>
#include <vector>

#include "core/error.h"

namespace ferrite::tools {
namespace {

// Runs `f`, turning the library's InvalidArgument into a CLI11 parse error
// (which main() reports with the usage hint).
// (The library's messages already name the option.)
template <class F>
void checked(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    throw CLI::ValidationError(e.what());
  }
}

// A value check with a readable message ("must be >= 1, got 0.5").
CLI::Validator at_least(double min) {
  const std::string bound = CLI::detail::to_string(min);
  return CLI::Validator(
      [min, bound](std::string& text) -> std::string {
        double v = 0.0;
        if (!CLI::detail::lexical_cast(text, v)) return "not a number: " + text;
        return v >= min ? std::string() : "must be >= " + bound + ", got " + text;
      },
      ">=" + bound);
}

std::string default_order_names() {
  std::string out;
  for (sampling::Stage s : sampling::default_stage_order()) out += std::string(out.empty() ? "" : ";") + stage_name(s);
  return out;
}

std::string default_order_chars() {
  std::string out;
  for (sampling::Stage s : sampling::default_stage_order()) out += stage_char(s);
  return out;
}

}  // namespace

void add_sampling_options(CLI::App& app, sampling::SamplerParams& p) {
  const std::string g = "Sampling";
  app.add_option_function<std::string>(
         "-s,--seed", [&p](const std::string& v) { checked([&] { p.seed = sampling::parse_seed(v); }); },
         "RNG seed (default: -1, a random seed)")
      ->group(g);
  app.add_option("--temp,--temperature", p.temperature, "temperature; <= 0: greedy")->capture_default_str()->group(g);
  app.add_option("--top-k", p.top_k, "top-k sampling (0 = disabled)")->capture_default_str()->group(g);
  app.add_option("--top-p", p.top_p, "top-p sampling (1.0 = disabled)")->capture_default_str()->group(g);
  app.add_option("--min-p", p.min_p, "min-p sampling (0.0 = disabled)")->capture_default_str()->group(g);
  app.add_option("--top-nsigma,--top-n-sigma", p.top_n_sigma, "top-n-sigma sampling (-1.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--xtc-probability", p.xtc_probability, "XTC probability (0.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--xtc-threshold", p.xtc_threshold, "XTC threshold (> 0.5 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--typical,--typical-p", p.typical_p, "locally typical sampling, parameter p (1.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--min-keep", p.min_keep, "keep at least this many candidates in each cut (0 = 1)")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(g);
  app.add_option("--repeat-last-n", p.penalty_last_n, "last n tokens to penalize (0 = disabled, -1 = context size)")
      ->capture_default_str()
      ->check(at_least(-1))
      ->group(g);
  app.add_option("--repeat-penalty", p.penalty_repeat, "repetition penalty (1.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--presence-penalty", p.penalty_present, "presence penalty (0.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--frequency-penalty", p.penalty_freq, "frequency penalty (0.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_flag("--penalize-nl,!--no-penalize-nl", p.penalize_nl, "whether the penalties apply to the newline token")
      ->capture_default_str()
      ->group(g);
  app.add_option("--dry-multiplier", p.dry_multiplier, "DRY multiplier (0.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--dry-base", p.dry_base, "DRY base (>= 1)")
      ->capture_default_str()
      ->check(at_least(1))
      ->group(g);
  app.add_option("--dry-allowed-length", p.dry_allowed_length, "DRY: repeats longer than this are penalized")
      ->capture_default_str()
      ->check(at_least(0))
      ->group(g);
  app.add_option("--dry-penalty-last-n", p.dry_penalty_last_n, "DRY: tokens scanned (0 = disabled, -1 = context size)")
      ->capture_default_str()
      ->check(at_least(-1))
      ->group(g);
  app.add_option_function<std::vector<std::string>>(
         "--dry-sequence-breaker",
         [&p](const std::vector<std::string>& values) {
           p.dry_sequence_breakers.clear();  // the first one replaces the defaults
           for (const std::string& v : values) {
             if (v == "none") {
               p.dry_sequence_breakers.clear();
             } else {
               p.dry_sequence_breakers.push_back(v);
             }
           }
         },
         "DRY sequence breaker, repeatable; replaces the defaults ('\\n', ':', '\"', '*'); \"none\": no breakers")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(g);
  app.add_option("--dynatemp-range", p.dynatemp_range, "dynamic temperature range (0.0 = disabled)")
      ->capture_default_str()
      ->group(g);
  app.add_option("--dynatemp-exp", p.dynatemp_exponent, "dynamic temperature exponent")
      ->capture_default_str()
      ->group(g);
  app.add_option("--mirostat", p.mirostat, "Mirostat: 0 = disabled, 1 = Mirostat, 2 = Mirostat 2.0")
      ->capture_default_str()
      ->check(CLI::Range(0, 2))
      ->group(g);
  app.add_option("--mirostat-lr", p.mirostat_eta, "Mirostat learning rate, eta")->capture_default_str()->group(g);
  app.add_option("--mirostat-ent", p.mirostat_tau, "Mirostat target entropy, tau")->capture_default_str()->group(g);
  app.add_option_function<std::string>(
         "--samplers",
         [&p](const std::string& v) { checked([&] { p.samplers = sampling::parse_stage_names(v); }); },
         "samplers in order, separated by ';' (default: " + default_order_names() + ")")
      ->group(g);
  app.add_option_function<std::string>(
         "--sampling-seq,--sampler-seq",
         [&p](const std::string& v) {
           checked([&] { p.samplers = sampling::parse_stage_chars(v); });
         },
         "samplers in order, one character each (default: " + default_order_chars() + ")")
      ->group(g);
  app.add_option_function<std::vector<std::string>>(
         "-l,--logit-bias",
         [&p](const std::vector<std::string>& values) {
           checked([&] {
             for (const std::string& v : values) p.logit_bias.push_back(sampling::parse_logit_bias(v));
           });
         },
         "TOKEN_ID(+/-)BIAS, repeatable: e.g. 15043+1 makes token 15043 likelier, 15043-inf bans it")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(g);
}

sampling::ModelInfo sampling_model_info(const tokenizer::Tokenizer& tok, int32_t n_ctx, int32_t n_ctx_train) {
  sampling::ModelInfo info;
  info.n_vocab = tok.n_vocab();
  info.n_ctx = n_ctx;
  info.n_ctx_train = n_ctx_train;
  const std::vector<int32_t> nl = tok.encode("\n", false, false);
  if (nl.size() == 1) info.newline_token = nl[0];
  info.text.pieces.reserve(static_cast<size_t>(info.n_vocab));
  for (int32_t id = 0; id < info.n_vocab; ++id) info.text.pieces.push_back(tok.token_to_piece(id, true));
  info.text.tokenize = [&tok](std::string_view s) { return tok.encode(s, false, false); };
  return info;
}

}  // namespace ferrite::tools
