// Errors across the C boundary: exception types map to status codes, and the
// message is kept per thread for ferrite_last_error().
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "capi/handles.h"
#include "core/error.h"

namespace ferrite::capi {
namespace {

thread_local std::string t_last_error;

}  // namespace

ferrite_status fail(ferrite_status status, const std::string& message) {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();  // no memory for the message: the status still says what failed
  }
  return status;
}

ferrite_status fail_current_exception() noexcept {
  try {
    throw;
  } catch (const Failure& e) {
    return fail(e.status(), e.what());
  } catch (const IoError& e) {
    return fail(FERRITE_ERR_IO, e.what());
  } catch (const FormatError& e) {
    return fail(FERRITE_ERR_FORMAT, e.what());
  } catch (const ModelError& e) {
    return fail(FERRITE_ERR_MODEL, e.what());
  } catch (const InvalidArgument& e) {
    return fail(FERRITE_ERR_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return fail(FERRITE_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::length_error& e) {
    return fail(FERRITE_ERR_OUT_OF_MEMORY, std::string("out of memory: ") + e.what());
  } catch (const std::exception& e) {
    return fail(FERRITE_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(FERRITE_ERR_INTERNAL, "unknown exception");
  }
}

void copy_out(const void* bytes, size_t n, void* buf, size_t capacity, size_t* length, bool text) {
  if (length == nullptr) throw Failure(FERRITE_ERR_INVALID_ARGUMENT, "length is NULL");
  *length = n;
  const size_t needed = n + (text ? 1 : 0);
  if (buf == nullptr || capacity < needed) {
    throw Failure(FERRITE_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(buf ? capacity : 0) + " bytes; " +
                                                    std::to_string(needed) + " are needed");
  }
  auto* out = static_cast<char*>(buf);
  if (n > 0) std::memcpy(out, bytes, n);
  if (text) out[n] = '\0';
}

void copy_tokens(const std::vector<int32_t>& ids, int32_t* out, size_t capacity, size_t* n_tokens) {
  if (n_tokens == nullptr) throw Failure(FERRITE_ERR_INVALID_ARGUMENT, "n_tokens is NULL");
  *n_tokens = ids.size();
  if (ids.empty()) return;
  if (out == nullptr || capacity < ids.size()) {
    throw Failure(FERRITE_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(out ? capacity : 0) + " tokens; " +
                                                    std::to_string(ids.size()) + " are needed");
  }
  std::memcpy(out, ids.data(), ids.size() * sizeof(int32_t));
}

void check_token(const tokenizer::Tokenizer& tok, int32_t token) {
  if (token < 0 || token >= tok.n_vocab()) {
    throw Failure(FERRITE_ERR_INVALID_ARGUMENT, "token id " + std::to_string(token) +
                                                    " is outside the vocabulary (0.." +
                                                    std::to_string(tok.n_vocab() - 1) + ")");
  }
}

}  // namespace ferrite::capi

extern "C" {

const char* ferrite_last_error(void) noexcept { return ferrite::capi::t_last_error.c_str(); }

const char* ferrite_status_name(ferrite_status status) noexcept {
  // A C caller may pass any int; in C++ reading an enum outside its values is
  // undefined, so the switch reads the parameter's bytes as an int.
  int code = 0;
  std::memcpy(&code, &status, sizeof code);
  static_assert(sizeof(ferrite_status) == sizeof(int));
  switch (code) {
    case FERRITE_OK: return "ok";
    case FERRITE_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case FERRITE_ERR_IO: return "io";
    case FERRITE_ERR_FORMAT: return "format";
    case FERRITE_ERR_MODEL: return "model";
    case FERRITE_ERR_CONTEXT_FULL: return "context_full";
    case FERRITE_ERR_BUFFER_TOO_SMALL: return "buffer_too_small";
    case FERRITE_ERR_CANCELLED: return "cancelled";
    case FERRITE_ERR_OUT_OF_MEMORY: return "out_of_memory";
    case FERRITE_ERR_INTERNAL: return "internal";
  }
  return "unknown";
}

}  // extern "C"
