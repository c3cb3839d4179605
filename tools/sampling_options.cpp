#include "sampling_options.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "sampling/param_table.h"

namespace ferrite::tools {
namespace {

// Sets one parameter from its command-line text; the library's InvalidField
// becomes a CLI11 parse error (which main() reports with the usage hint).
void set_from_text(sampling::SamplerParams& p, const sampling::ParamSpec& spec, const sampling::ParamValue& v) {
  try {
    sampling::set_param(p, spec, v);
  } catch (const InvalidArgument& e) {
    throw CLI::ValidationError(e.what());
  }
}

}  // namespace

void add_sampling_options(CLI::App& app, sampling::SamplerParams& p) {
  const std::string group = "Sampling";
  const sampling::SamplerParams defaults;
  for (const sampling::ParamSpec& spec : sampling::param_table()) {
    std::string help = spec.help;
    if (spec.kind == sampling::ParamKind::Float || spec.kind == sampling::ParamKind::Int) {
      help += ", " + sampling::range_text(spec);
    }
    const std::string def = sampling::param_text(defaults, spec);
    if (spec.kind != sampling::ParamKind::LogitBias && !def.empty()) help += " (default: " + def + ")";
    CLI::Option* opt = nullptr;
    switch (spec.kind) {
      case sampling::ParamKind::Bool:
        opt = app.add_flag_function(
            spec.flags, [&p, &spec](int64_t count) { set_from_text(p, spec, count > 0); }, help);
        break;
      case sampling::ParamKind::LogitBias:
      case sampling::ParamKind::Breakers:
        // Repeatable: each occurrence adds a bias / a breaker.
        opt = app.add_option_function<std::vector<std::string>>(
                     spec.flags,
                     [&p, &spec](const std::vector<std::string>& values) {
                       if (spec.kind == sampling::ParamKind::Breakers) {
                         set_from_text(p, spec, values);
                       } else {
                         for (const std::string& v : values) set_from_text(p, spec, v);
                       }
                     },
                     help)
                  ->expected(1)
                  ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        break;
      default:
        opt = app.add_option_function<std::string>(
            spec.flags, [&p, &spec](const std::string& v) { set_from_text(p, spec, v); }, help);
        break;
    }
    opt->group(group);
  }
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
