#include "server/request_params.h"

#include <cmath>
#include <limits>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "server/api_error.h"
#include "server/engine.h"

namespace ferrite::server {
namespace {

using json = nlohmann::ordered_json;

constexpr double kMaxTemperature = 2.0;
constexpr double kMaxPenalty = 2.0;
constexpr double kMaxLogitBias = 100.0;
constexpr int64_t kMaxTopK = 1 << 20;

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

void parse_logit_bias(const json& body, Engine& engine, sampling::SamplerParams& sp) {
  if (!body.contains("logit_bias") || body["logit_bias"].is_null()) return;
  const json& lb = body["logit_bias"];
  if (!lb.is_object()) throw bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
  const int64_t n_vocab = engine.tokenizer().n_vocab();
  for (const auto& [key, value] : lb.items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id >= n_vocab) {
      throw bad_request("logit_bias key '" + key + "' is not a token id in [0, " + std::to_string(n_vocab - 1) + "]",
                        "logit_bias");
    }
    if (!value.is_number()) throw bad_request("logit_bias values must be numbers", "logit_bias");
    const double bias = value.get<double>();
    if (!(bias >= -kMaxLogitBias && bias <= kMaxLogitBias)) {
      throw bad_request("logit_bias values must be in " + range_text(-kMaxLogitBias, kMaxLogitBias), "logit_bias");
    }
    // OpenAI: -100 bans the token.
    const float b = bias <= -kMaxLogitBias ? -std::numeric_limits<float>::infinity() : static_cast<float>(bias);
    sp.logit_bias.push_back({static_cast<int32_t>(id), b});
  }
}

std::string grammar_of(const json& body) {
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
      gbnf = grammar::json_schema_to_gbnf(schema);
    } else if (type != "text") {
      throw bad_request("response_format type '" + type + "' is not one of text, json_object, json_schema",
                        "response_format");
    }
  }
  if (body.contains("json_schema") && body["json_schema"].is_object()) {
    gbnf = grammar::json_schema_to_gbnf(body["json_schema"]);
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

RequestOptions parse_generation_fields(const json& body, Engine& engine, bool chat) {
  RequestOptions r;
  sampling::SamplerParams& sp = r.gen.sampling;
  constexpr int64_t kMaxInt = std::numeric_limits<int32_t>::max();
  if (auto v = opt_number(body, "temperature", 0.0, kMaxTemperature)) sp.temperature = static_cast<float>(*v);
  if (auto v = opt_number(body, "top_p", 0.0, 1.0)) sp.top_p = static_cast<float>(*v);
  if (auto v = opt_number(body, "min_p", 0.0, 1.0)) sp.min_p = static_cast<float>(*v);
  if (auto v = opt_integer(body, "top_k", 0, kMaxTopK)) sp.top_k = static_cast<int32_t>(*v);
  if (auto v = opt_number(body, "presence_penalty", -kMaxPenalty, kMaxPenalty)) sp.penalty_present = static_cast<float>(*v);
  if (auto v = opt_number(body, "frequency_penalty", -kMaxPenalty, kMaxPenalty)) sp.penalty_freq = static_cast<float>(*v);
  if (auto v = opt_number(body, "repeat_penalty", 0.0, 10.0)) sp.penalty_repeat = static_cast<float>(*v);
  if (auto v = opt_integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    sp.seed = *v < 0 ? sampling::kRandomSeed : static_cast<uint64_t>(*v);
  }
  parse_logit_bias(body, engine, sp);

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
  r.gen.logprobs = r.logprobs;
  r.gen.n_probs = r.top_logprobs;
  r.gen.stop = parse_stop(body);
  r.gen.ignore_eos = opt_bool(body, "ignore_eos").value_or(false);
  try {
    r.gen.grammar = grammar_of(body);
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

void check_budget(GenerationParams& gen, bool max_tokens_given, int64_t slot_ctx, const char* prompt_param) {
  const int64_t n_prompt = static_cast<int64_t>(gen.prompt.size());
  if (n_prompt == 0) throw bad_request("the prompt is empty", prompt_param);
  if (n_prompt >= slot_ctx) {
    throw bad_request("This model's maximum context length is " + std::to_string(slot_ctx) +
                          " tokens per slot, but the prompt has " + std::to_string(n_prompt) + " tokens",
                      prompt_param, "context_length_exceeded");
  }
  if (max_tokens_given && n_prompt + gen.n_predict > slot_ctx) {
    throw bad_request("This model's maximum context length is " + std::to_string(slot_ctx) +
                          " tokens per slot; the prompt has " + std::to_string(n_prompt) + " tokens and " +
                          std::to_string(gen.n_predict) + " more were requested (at most " +
                          std::to_string(slot_ctx - n_prompt) + ")",
                      "max_tokens", "context_length_exceeded");
  }
}

}  // namespace ferrite::server
