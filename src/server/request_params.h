// Reading the generation fields of a request body (OpenAI's names, plus the
// llama.cpp-style native ones) into engine parameters, with type and range
// checks that raise ApiError 400 naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "server/task.h"

namespace ferrite::server {

class Engine;

struct RequestOptions {
  GenerationParams gen;   // everything but the prompt
  int n = 1;              // choices per prompt
  bool stream = false;
  bool include_usage = false;
  bool logprobs = false;
  int top_logprobs = 0;
  bool max_tokens_given = false;
};

// Largest `n` accepted.
constexpr int kMaxChoices = 16;
// Largest number of stop strings.
constexpr size_t kMaxStopStrings = 16;
// Largest top_logprobs.
constexpr int kMaxTopLogprobs = 20;

// `chat`: logprobs is a bool with top_logprobs (chat) rather than an integer
// (completions). A JSON schema (response_format, json_schema) converts within
// `limits` (the server's --schema-* bounds and the client's cancel flag:
// routes.h schema_limits). Throws ApiError, or Cancelled.
RequestOptions parse_generation_fields(const nlohmann::ordered_json& body, Engine& engine, bool chat,
                                       const grammar::SchemaLimits& limits);

// 404 when `model` names another model (absent or equal to id is fine).
void check_model(const nlohmann::ordered_json& body, const std::string& model_id);

// 400 when the prompt does not fit a slot, or (context shift off) the prompt
// plus the requested tokens do not; resolves n_predict -1 to what is left of
// the slot's context.
void check_budget(GenerationParams& gen, bool max_tokens_given, const Engine& engine,
                  const char* prompt_param = "prompt");

// Typed field access: nullopt when absent or null; ApiError for a wrong type
// or a value outside [lo, hi].
std::optional<double> opt_number(const nlohmann::ordered_json& body, const char* key, double lo, double hi);
std::optional<int64_t> opt_integer(const nlohmann::ordered_json& body, const char* key, int64_t lo, int64_t hi);
std::optional<bool> opt_bool(const nlohmann::ordered_json& body, const char* key);
std::optional<std::string> opt_string(const nlohmann::ordered_json& body, const char* key);

}  // namespace ferrite::server
