// Errors a request can cause, in OpenAI's shape:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// with the HTTP status that goes with them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ferrite::server {

constexpr int kStatusBadRequest = 400;
constexpr int kStatusUnauthorized = 401;
constexpr int kStatusNotFound = 404;
constexpr int kStatusPayloadTooLarge = 413;
constexpr int kStatusInternal = 500;
constexpr int kStatusNotImplemented = 501;
constexpr int kStatusUnavailable = 503;

class ApiError : public InvalidArgument {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {},
           std::string code = {})
      : InvalidArgument(message), status_(status), type_(std::move(type)), param_(std::move(param)),
        code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

// A 400 invalid_request_error naming the offending parameter.
inline ApiError bad_request(const std::string& message, const std::string& param = {},
                            const std::string& code = {}) {
  return ApiError(kStatusBadRequest, "invalid_request_error", message, param, code);
}

inline nlohmann::json error_body(int status, const std::string& type, const std::string& message,
                                 const std::string& param = {}, const std::string& code = {}) {
  nlohmann::json e = {{"message", message}, {"type", type}};
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", e}};
}

inline nlohmann::json error_body(const ApiError& e) {
  return error_body(e.status(), e.type(), e.what(), e.param(), e.code());
}

}  // namespace ferrite::server
