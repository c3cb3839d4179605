// What the C API's opaque handles hold, and the guard every entry point runs
// its body in: exceptions become a ferrite_status and this thread's message
// (errors.cpp), so nothing is thrown across the C boundary.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "ferrite.h"
#include "model/model.h"
#include "runtime/context.h"
#include "runtime/generation.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace ferrite::capi {

// A loaded model with its tokenizer; contexts and samplers share it, so it
// lives until the last of them and the model handle are freed.
struct ModelState {
  std::shared_ptr<const model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::unique_ptr<runtime::GenerationVocab> vocab;  // refers to *tok
  int n_gpu_layers = 0;
  std::string architecture;
};

// An error with its status, for failures the C layer itself detects.
class Failure : public Error {
 public:
  Failure(ferrite_status status, const std::string& what) : Error(what), status_(status) {}
  ferrite_status status() const { return status_; }

 private:
  ferrite_status status_;
};

// Records a failure for ferrite_last_error() and returns its status.
ferrite_status fail(ferrite_status status, const std::string& message);
// The status and message of the exception being handled (call in a catch).
ferrite_status fail_current_exception() noexcept;

// Runs `body` (which returns nothing), turning any exception into a status.
template <class F>
ferrite_status guarded(F&& body) noexcept {
  try {
    body();
    return FERRITE_OK;
  } catch (...) {
    return fail_current_exception();
  }
}

// Throws Failure(INVALID_ARGUMENT) naming `what` when p is NULL.
template <class T>
T& need(T* p, const char* what) {
  if (p == nullptr) throw Failure(FERRITE_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return *p;
}

// The same for a string argument (returns the pointer).
inline const char* need_text(const char* p, const char* what) {
  if (p == nullptr) throw Failure(FERRITE_ERR_INVALID_ARGUMENT, std::string(what) + " is NULL");
  return p;
}

// Copies `bytes` to a caller's buffer under the header's convention: the
// length always, the bytes (and, for text, a NUL) only when they fit, else
// Failure(BUFFER_TOO_SMALL).
void copy_out(const void* bytes, size_t n, void* buf, size_t capacity, size_t* length, bool text);

// The same for a token list: *n_tokens always, the ids when they fit.
void copy_tokens(const std::vector<int32_t>& ids, int32_t* out, size_t capacity, size_t* n_tokens);

// Checks a token id against the vocabulary (InvalidArgument).
void check_token(const tokenizer::Tokenizer& tok, int32_t token);

}  // namespace ferrite::capi

struct ferrite_model {
  std::shared_ptr<ferrite::capi::ModelState> state;
};

struct ferrite_context {
  std::shared_ptr<ferrite::capi::ModelState> model;
  std::unique_ptr<ferrite::runtime::Context> ctx;
};

struct ferrite_sampler_params {
  ferrite::runtime::GenerationParams gen;
};

struct ferrite_sampler {
  std::shared_ptr<ferrite::capi::ModelState> model;
  std::unique_ptr<ferrite::sampling::Sampler> sampler;
};
