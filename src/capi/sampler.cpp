// Sampler settings through the engine's parameter table
// (sampling/param_table.h: the same names, ranges and checks as the command
// line, the server and Python), and the sampler chain built from them the
// way the runtime's generation step builds its own.
#include <cmath>

#include "capi/handles.h"
#include "runtime/grammar_constraint.h"
#include "sampling/param_table.h"

using namespace ferrite;
using capi::need;

namespace {

const sampling::ParamSpec& spec_of(const char* name) {
  const sampling::ParamSpec* s = sampling::find_param(capi::need_text(name, "name"));
  if (s == nullptr) {
    throw capi::Failure(FERRITE_ERR_INVALID_ARGUMENT, std::string("unknown sampler parameter '") + name +
                                                          "' (ferrite_sampler_param_name lists them)");
  }
  return *s;
}

// A number as the table's kind of value wants it.
sampling::ParamValue number_value(const sampling::ParamSpec& s, double v) {
  switch (s.kind) {
    case sampling::ParamKind::Bool:
      if (v != 0.0 && v != 1.0) throw InvalidField(s.name, std::string("'") + s.name + "' takes 0 or 1");
      return v != 0.0;
    case sampling::ParamKind::Int:
    case sampling::ParamKind::Seed:
      if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18) return static_cast<int64_t>(v);
      return v;  // set_param names the problem
    case sampling::ParamKind::Float: return v;
    default: throw InvalidField(s.name, std::string("'") + s.name + "' takes text (ferrite_sampler_params_set)");
  }
}

}  // namespace

extern "C" {

ferrite_sampler_params* ferrite_sampler_params_new(void) noexcept {
  try {
    return new ferrite_sampler_params{};
  } catch (...) {
    capi::fail_current_exception();
    return nullptr;
  }
}

void ferrite_sampler_params_free(ferrite_sampler_params* params) noexcept { delete params; }

size_t ferrite_sampler_param_count(void) noexcept { return sampling::param_table().size(); }

const char* ferrite_sampler_param_name(size_t i) noexcept {
  const auto table = sampling::param_table();
  return i < table.size() ? table[i].name : nullptr;
}

const char* ferrite_sampler_param_help(size_t i) noexcept {
  const auto table = sampling::param_table();
  return i < table.size() ? table[i].help : nullptr;
}

ferrite_status ferrite_sampler_params_set(ferrite_sampler_params* params, const char* name,
                                          const char* value) noexcept {
  return capi::guarded([&] {
    auto& p = need(params, "params");
    sampling::set_param(p.gen.sampling, spec_of(name), std::string(capi::need_text(value, "value")));
  });
}

ferrite_status ferrite_sampler_params_set_number(ferrite_sampler_params* params, const char* name,
                                                 double value) noexcept {
  return capi::guarded([&] {
    auto& p = need(params, "params");
    const sampling::ParamSpec& s = spec_of(name);
    sampling::set_param(p.gen.sampling, s, number_value(s, value));
  });
}

ferrite_status ferrite_sampler_params_get(const ferrite_sampler_params* params, const char* name, char* buf,
                                          size_t capacity, size_t* length) noexcept {
  return capi::guarded([&] {
    const auto& p = need(params, "params");
    const std::string text = sampling::param_text(p.gen.sampling, spec_of(name));
    capi::copy_out(text.data(), text.size(), buf, capacity, length, true);
  });
}

ferrite_status ferrite_sampler_params_set_grammar(ferrite_sampler_params* params, const char* gbnf) noexcept {
  return capi::guarded([&] { need(params, "params").gen.grammar = gbnf ? gbnf : ""; });
}

ferrite_status ferrite_sampler_params_add_stop(ferrite_sampler_params* params, const char* stop) noexcept {
  return capi::guarded([&] {
    auto& p = need(params, "params");
    const std::string s = capi::need_text(stop, "stop");
    if (s.empty()) throw InvalidArgument("a stop string must not be empty");
    p.gen.stop.push_back(s);
  });
}

ferrite_status ferrite_sampler_new(const ferrite_model* model, const ferrite_sampler_params* params, int64_t n_ctx,
                                   ferrite_sampler** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return capi::guarded([&] {
    const auto& m = need(model, "model");
    need(out, "out");
    if (n_ctx < 0) throw InvalidArgument("n_ctx must not be negative, got " + std::to_string(n_ctx));
    const runtime::GenerationParams gp = params ? params->gen : runtime::GenerationParams{};
    const auto n_ctx_train = static_cast<int32_t>(m.state->model->hparams().n_ctx_train);
    const runtime::GenerationContext gc{.n_ctx = n_ctx > 0 ? static_cast<int32_t>(n_ctx) : n_ctx_train,
                                        .n_ctx_train = n_ctx_train};
    auto s = std::make_unique<ferrite_sampler>();
    s->model = m.state;
    s->sampler = std::make_unique<sampling::Sampler>(gp.sampling, m.state->vocab->sampling_info(gp.sampling, gc));
    if (!gp.grammar.empty()) {
      s->sampler->set_constraint(
          std::make_shared<runtime::GrammarConstraint>(gp.grammar, m.state->vocab->grammar_pieces()));
    }
    *out = s.release();
  });
}

void ferrite_sampler_free(ferrite_sampler* sampler) noexcept { delete sampler; }

ferrite_status ferrite_sampler_accept(ferrite_sampler* sampler, int32_t token, int advance_grammar) noexcept {
  return capi::guarded([&] {
    auto& s = need(sampler, "sampler");
    capi::check_token(*s.model->tok, token);
    s.sampler->accept(token, advance_grammar != 0);
  });
}

ferrite_status ferrite_sampler_sample_logits(ferrite_sampler* sampler, const float* logits, size_t n_logits,
                                             int32_t* token) noexcept {
  return capi::guarded([&] {
    auto& s = need(sampler, "sampler");
    need(logits, "logits");
    need(token, "token");
    const auto n_vocab = static_cast<size_t>(s.model->tok->n_vocab());
    if (n_logits != n_vocab) {
      throw InvalidArgument("n_logits is " + std::to_string(n_logits) + "; the vocabulary has " +
                            std::to_string(n_vocab) + " tokens");
    }
    *token = s.sampler->sample({logits, n_logits});
  });
}

ferrite_status ferrite_sampler_sample(ferrite_sampler* sampler, ferrite_context* ctx, int32_t i,
                                      int32_t* token) noexcept {
  return capi::guarded([&] {
    auto& s = need(sampler, "sampler");
    runtime::Context& c = *need(ctx, "ctx").ctx;
    need(token, "token");
    if (&c.model() != s.model->model.get()) throw InvalidArgument("the sampler and the context have different models");
    *token = s.sampler->sample(c.logits(i == -1 ? c.n_outputs() - 1 : i));
  });
}

ferrite_status ferrite_sampler_reset(ferrite_sampler* sampler) noexcept {
  return capi::guarded([&] { need(sampler, "sampler").sampler->reset(); });
}

}  // extern "C"
