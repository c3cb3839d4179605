// The library's versions: the C API's (FERRITE_API_VERSION) and the engine's.
#include "capi/handles.h"
#include "core/version.h"
#include "runtime/offload.h"

#ifndef FERRITE_COMMIT
#define FERRITE_COMMIT "unknown"
#endif

extern "C" {

int ferrite_api_version(void) { return FERRITE_API_VERSION; }

const char* ferrite_version(void) {
  static const std::string text = std::string(ferrite::kVersion) + " (commit " FERRITE_COMMIT ")";
  return text.c_str();
}

int ferrite_supports_gpu_offload(void) { return ferrite::runtime::gpu_offload_available() ? 1 : 0; }

}  // extern "C"
