// The library's versions: the C API's (FERRITE_API_VERSION) and the engine's.
#include "core/version.h"

#include <cstdio>

#include "capi/handles.h"
#include "runtime/offload.h"

#ifndef FERRITE_COMMIT
#define FERRITE_COMMIT "unknown"
#endif

extern "C" {

int ferrite_api_version(void) noexcept { return FERRITE_API_VERSION; }

const char* ferrite_version(void) noexcept {
  // Built once without allocating (nothing here can throw).
  static char text[128];
  static const bool once =
      (std::snprintf(text, sizeof text, "%s (commit %s)", ferrite::kVersion, FERRITE_COMMIT), true);
  static_cast<void>(once);
  return text;
}

int ferrite_supports_gpu_offload(void) noexcept { return ferrite::runtime::gpu_offload_available() ? 1 : 0; }

}  // extern "C"
