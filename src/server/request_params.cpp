#include "server/request_params.h"
#include "server/routes.h"

#include <cmath>
#include <limits>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "sampling/param_table.h"
#include "server/api_error.h"
#include "server/engine.h"

namespace ferrite::server {
namespace {

using json = nlohmann::ordered_json;

std::string range_text(double lo, double hi) {
  auto fmt = [](double v) {
    if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
    return std::to_string(v);
  };
  return "[" + fmt(lo) + ", " + fmt(hi) + "]";
}

std::vector<std::string> parse_stop(const json& body) {
  if (!body.contains("stop") || body["stop"].is_null()) return {};
  const json& s = body["stop"];
  if (s.is_string()) return {s.get<std::string>()};
  if (!s.is_array()) throw bad_request("'stop' must be a string or an array of strings", "stop");
  if (s.size() > kMaxStopStrings) {
    throw bad_request("'stop' holds at most " + std::to_string(kMaxStopStrings) + " strings", "stop");
  }
  std::vector<std::string> out;
  for (const json& x : s) {
    if (!x.is_string()) throw bad_request("'stop' must be a string or an array of strings", "stop");
    out.push_back(x.get<std::string>());
  }
  return out;
}

// logit_bias: OpenAI's object of token id -> bias, or llama.cpp's array of
// [id, bias] pairs (bias false bans the token).
std::vector<sampling::LogitBias> logit_biases(const json& lb, Engine& engine) {
  const int64_t n_vocab = engine.tokenizer().n_vocab();
  const auto token = [&](const json& key) -> int32_t {
    long long id = -1;
    size_t used = 0;
    if (key.is_number_integer()) {
      id = key.get<long long>();
      used = 1;
    } else if (key.is_string()) {
      const std::string k = key.get<std::string>();
      try {
        id = std::stoll(k, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != k.size()) used = 0;
    }
    if (used == 0 || id < 0 || id >= n_vocab) {
      throw bad_request("logit_bias key " + key.dump() + " is not a token id in [0, " + std::to_string(n_vocab - 1) + "]",
                        "logit_bias");
    }
    return static_cast<int32_t>(id);
  };
  const auto bias = [](const json& v) -> float {
    if (v.is_boolean() && !v.get<bool>()) return -std::numeric_limits<float>::infinity();
    if (!v.is_number()) throw bad_request("logit_bias values must be numbers", "logit_bias");
    return v.get<float>();
  };
  std::vector<sampling::LogitBias> out;
  if (lb.is_object()) {
    for (const auto& [key, value] : lb.items()) out.push_back({token(json(key)), bias(value)});
  } else if (lb.is_array()) {
    for (const json& pair : lb) {
      if (!pair.is_array() || pair.size() != 2) throw bad_request("logit_bias pairs must be [token id, bias]", "logit_bias");
      out.push_back({token(pair[0]), bias(pair[1])});
    }
  } else {
    throw bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
  }
  return out;
}

// A JSON value as the sampler table takes it.
sampling::ParamValue param_value(const json& v, const sampling::ParamSpec& spec, Engine& engine) {
  if (spec.kind == sampling::ParamKind::LogitBias) return logit_biases(v, engine);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return v.get<double>();
    }
    return v.get<int64_t>();
  }
  if (v.is_number()) return v.get<double>();
  if (v.is_array()) {
    std::vector<std::string> list;
    for (const json& x : v) {
      if (!x.is_string()) throw bad_request(std::string("'") + spec.name + "' must be a list of strings", spec.name);
      list.push_back(x.get<std::string>());
    }
    return list;
  }
  if (v.is_string()) {
    // Numbers and flags come as JSON numbers and booleans, not as text.
    const bool textual = spec.kind == sampling::ParamKind::Samplers || spec.kind == sampling::ParamKind::SamplerChars ||
                         spec.kind == sampling::ParamKind::Breakers;
    if (!textual) throw bad_request(std::string("'") + spec.name + "' must be a number", spec.name);
    return v.get<std::string>();
  }
  throw bad_request(std::string("'") + spec.name + "' has the wrong type", spec.name);
}

// Every sampler parameter the body names (sampling/param_table.h).
void read_sampler_fields(const json& body, Engine& engine, sampling::SamplerParams& sp) {
  for (const sampling::ParamSpec& spec : sampling::param_table()) {
    if (!body.contains(spec.name) || body[spec.name].is_null()) continue;
    try {
      sampling::set_param(sp, spec, param_value(body[spec.name], spec, engine));
    } catch (const InvalidField& e) {
      throw bad_request(e.what(), e.field());
    }
  }
}

std::string grammar_of(const json& body, const grammar::SchemaLimits& limits) {
  std::string gbnf;
  if (body.contains("response_format") && !body["response_format"].is_null()) {
    const json& rf = body["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
      throw bad_request("'response_format' must be an object with a 'type'", "response_format");
    }
    const std::string type = rf["type"];
    if (type == "json_object") {
      gbnf = grammar::json_any_gbnf(true);
    } else if (type == "json_schema") {
      if (!rf.contains("json_schema") || !rf["json_schema"].is_object()) {
        throw bad_request("response_format json_schema needs a 'json_schema' object", "response_format");
      }
      const json& js = rf["json_schema"];
      const json schema = js.contains("schema") ? js["schema"] : json::object();
      if (!schema.is_object() && !schema.is_boolean()) {
        throw bad_request("response_format.json_schema.schema must be an object", "response_format");
      }
      gbnf = grammar::json_schema_to_gbnf(schema, limits);
    } else if (type != "text") {
      throw bad_request("response_format type '" + type + "' is not one of text, json_object, json_schema",
                        "response_format");
    }
  }
  if (body.contains("json_schema") && body["json_schema"].is_object()) {
    gbnf = grammar::json_schema_to_gbnf(body["json_schema"], limits);
  }
  if (auto g = opt_string(body, "grammar"); g && !g->empty()) gbnf = *g;
  if (!gbnf.empty()) grammar::Grammar::parse(gbnf);  // reports GBNF errors now, as a 400
  return gbnf;
}

}  // namespace

std::optional<double> opt_number(const json& body, const char* key, double lo, double hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number()) throw bad_request(std::string("'") + key + "' must be a number", key);
  const double d = v.get<double>();
  if (!(d >= lo && d <= hi)) throw bad_request(std::string("'") + key + "' must be in " + range_text(lo, hi), key);
  return d;
}

std::optional<int64_t> opt_integer(const json& body, const char* key, int64_t lo, int64_t hi) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  const json& v = body[key];
  if (!v.is_number_integer()) throw bad_request(std::string("'") + key + "' must be an integer", key);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    throw bad_request(std::string("'") + key + "' must be in " + range_text(lo, hi), key);
  }
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) {
    throw bad_request(std::string("'") + key + "' must be in " + range_text(static_cast<double>(lo), static_cast<double>(hi)), key);
  }
  return i;
}

std::optional<bool> opt_bool(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_boolean()) throw bad_request(std::string("'") + key + "' must be a boolean", key);
  return body[key].get<bool>();
}

std::optional<std::string> opt_string(const json& body, const char* key) {
  if (!body.contains(key) || body[key].is_null()) return std::nullopt;
  if (!body[key].is_string()) throw bad_request(std::string("'") + key + "' must be a string", key);
  return body[key].get<std::string>();
}

void check_model(const json& body, const std::string& model_id) {
  const auto model = opt_string(body, "model");
  if (model && !model->empty() && *model != model_id) {
    throw ApiError(kStatusNotFound, "invalid_request_error",
                   "The model '" + *model + "' does not exist; this server serves '" + model_id + "'", "model",
                   "model_not_found");
  }
}

RequestOptions parse_generation_fields(const json& body, Engine& engine, bool chat,
                                      const grammar::SchemaLimits& limits) {
  RequestOptions r;
  sampling::SamplerParams& sp = r.gen.sampling;
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  read_sampler_fields(body, engine, sp);

  std::optional<int64_t> max_tokens = opt_integer(body, "max_completion_tokens", 1, kMaxInt);
  if (!max_tokens) max_tokens = opt_integer(body, "max_tokens", 1, kMaxInt);
  if (!max_tokens) {
    if (auto v = opt_integer(body, "n_predict", -1, kMaxInt); v && *v >= 0) max_tokens = v;
  }
  r.max_tokens_given = max_tokens.has_value();
  r.gen.n_predict = max_tokens ? static_cast<int32_t>(*max_tokens) : -1;

  if (auto v = opt_integer(body, "n", 1, kMaxChoices)) r.n = static_cast<int>(*v);
  r.stream = opt_bool(body, "stream").value_or(false);
  if (body.contains("stream_options") && body["stream_options"].is_object()) {
    r.include_usage = opt_bool(body["stream_options"], "include_usage").value_or(false);
  } else if (body.contains("stream_options") && !body["stream_options"].is_null()) {
    throw bad_request("'stream_options' must be an object", "stream_options");
  }
  if (chat) {
    r.logprobs = opt_bool(body, "logprobs").value_or(false);
    if (auto v = opt_integer(body, "top_logprobs", 0, kMaxTopLogprobs)) {
      if (!r.logprobs) throw bad_request("'top_logprobs' requires 'logprobs': true", "top_logprobs");
      r.top_logprobs = static_cast<int>(*v);
    }
  } else if (auto v = opt_integer(body, "logprobs", 0, kMaxTopLogprobs)) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*v);
  }
  if (auto v = opt_integer(body, "n_probs", 0, kMaxTopLogprobs); v && *v > 0) {
    r.logprobs = true;
    r.top_logprobs = static_cast<int>(*v);
  }
  r.gen.n_probs = r.logprobs ? r.top_logprobs : -1;
  r.gen.stop = parse_stop(body);
  r.gen.ignore_eos = opt_bool(body, "ignore_eos").value_or(false);
  if (auto v = opt_integer(body, "n_keep", -1, kMaxInt)) r.gen.n_keep = *v;
  if (body.contains("lora") && !body["lora"].is_null()) r.gen.lora = parse_lora_field(body["lora"], engine.n_lora(), "lora");
  try {
    r.gen.grammar = grammar_of(body, limits);
  } catch (const ApiError&) {
    throw;
  } catch (const InvalidArgument& e) {
    throw bad_request(std::string("invalid response format or grammar: ") + e.what(), "response_format");
  }
  try {
    sampling::validate(sp);
  } catch (const InvalidArgument& e) {
    throw bad_request(e.what());
  }
  return r;
}

void check_budget(GenerationParams& gen, bool max_tokens_given, const Engine& engine, const char* prompt_param) {
  const int64_t slot_ctx = engine.slot_ctx();
  const int64_t n_prompt = static_cast<int64_t>(gen.prompt.size());
  if (n_prompt == 0) throw bad_request("the prompt is empty", prompt_param);
  if (n_prompt >= slot_ctx) {
    throw bad_request("This model's maximum context length is " + std::to_string(slot_ctx) +
                          " tokens per slot, but the prompt has " + std::to_string(n_prompt) + " tokens",
                      prompt_param, "context_length_exceeded");
  }
  // With context shift a slot goes on past its size (max_tokens bounds it);
  // without, the request must fit.
  if (max_tokens_given && !engine.context_shift() && n_prompt + gen.n_predict > slot_ctx) {
    throw bad_request("This model's maximum context length is " + std::to_string(slot_ctx) +
                          " tokens per slot; the prompt has " + std::to_string(n_prompt) + " tokens and " +
                          std::to_string(gen.n_predict) + " more were requested (at most " +
                          std::to_string(slot_ctx - n_prompt) + ")",
                      "max_tokens", "context_length_exceeded");
  }
  if (gen.n_predict < 0) gen.n_predict = slot_ctx - n_prompt;
}

}  // namespace ferrite::server
