#include "version.h"

#include "core/version.h"
#include "cpu/features.h"
#include "runtime/offload.h"

#ifndef FERRITE_COMMIT
#define FERRITE_COMMIT "unknown"
#endif

namespace ferrite::tools {

std::string version_text() {
  std::string out = std::string("ferrite ") + kVersion + "\ncommit: " + FERRITE_COMMIT + "\n";
  out += std::string("backends: cpu") + (runtime::gpu_offload_available() ? ", cuda" : "") + "\n";
#if defined(__x86_64__)
  out += "instruction sets built: scalar, avx2, avx512, avx512vnni, amx (x86-64)\n";
#elif defined(__aarch64__)
  out += "instruction sets built: scalar, neon, neon_i8mm (aarch64)\n";
#else
  out += "instruction sets built: scalar\n";
#endif
  out += "this CPU: " + cpu::isa_cap_name(cpu::host_isa_cap()) + "\nisa: " + cpu::isa_summary() + "\n";
  return out;
}

}  // namespace ferrite::tools
