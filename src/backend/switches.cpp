#include "backend/switches.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace ferrite::backend {
namespace {

// Off only where the variable is exactly "0".
bool on_unless_zero(const char* v) { return v == nullptr || std::strcmp(v, "0") != 0; }

const char* from_env(const char* name) { return std::getenv(name); }

}  // namespace

Switches parse_switches(const char* (*lookup)(const char* name)) {
  Switches s;
  s.repack = on_unless_zero(lookup("FERRITE_REPACK"));
  s.repack_float = on_unless_zero(lookup("FERRITE_REPACK_FLOAT"));
  s.repack_q6k = on_unless_zero(lookup("FERRITE_REPACK_Q6K"));
  s.amx = on_unless_zero(lookup("FERRITE_AMX"));
  const char* exact = lookup("FERRITE_CUDA_EXACT");
  s.cuda_exact = exact != nullptr && std::strcmp(exact, "1") == 0;
  s.cuda_graphs = on_unless_zero(lookup("FERRITE_CUDA_GRAPHS"));
  const char* fuse = lookup("FERRITE_CUDA_FUSE");
  s.cuda_fuse = on_unless_zero(fuse);
  s.cuda_fuse_attn = s.cuda_fuse && (fuse == nullptr || std::strcmp(fuse, "noattn") != 0);
  s.cuda_fuse_rope = s.cuda_fuse && (fuse == nullptr || std::strcmp(fuse, "norope") != 0);
  const char* pdl = lookup("FERRITE_CUDA_PDL");
  s.cuda_pdl = pdl == nullptr ? 2 : std::strcmp(pdl, "0") == 0 ? 0 : std::strcmp(pdl, "gemv") == 0 ? 1 : 2;
  if (const char* w = lookup("FERRITE_CUDA_ATTN_WARPS")) {
    const int v = std::atoi(w);
    if (v != 0 && v != 4 && v != 8 && v != 16) {
      throw InvalidArgument(std::string("FERRITE_CUDA_ATTN_WARPS: expected 4, 8 or 16, got '") + w + "'");
    }
    s.cuda_attn_warps = v;
  }
  if (const char* rows = lookup("FERRITE_CUDA_MMA_ROWS")) {
    long lo = 0, hi = 0;
    if (std::sscanf(rows, "%ld:%ld", &lo, &hi) != 2 || lo < 1 || hi < lo) {
      throw InvalidArgument(std::string("FERRITE_CUDA_MMA_ROWS: expected LO:HI (1 <= LO <= HI), got '") + rows + "'");
    }
    s.cuda_mma_min_rows = lo;
    s.cuda_mma_max_rows = hi;
  }
  return s;
}

const Switches& env_switches() {
  static const Switches s = parse_switches(from_env);
  return s;
}

std::vector<std::pair<std::string, std::string>> describe(const Switches& s) {
  auto b = [](bool v) { return std::string(v ? "1" : "0"); };
  const char* fuse = !s.cuda_fuse ? "0" : !s.cuda_fuse_attn ? "noattn" : !s.cuda_fuse_rope ? "norope" : "1";
  const char* pdl = s.cuda_pdl == 0 ? "0" : s.cuda_pdl == 1 ? "gemv" : "1";
  return {{"FERRITE_REPACK", b(s.repack)},
          {"FERRITE_REPACK_FLOAT", b(s.repack_float)},
          {"FERRITE_REPACK_Q6K", b(s.repack_q6k)},
          {"FERRITE_AMX", b(s.amx)},
          {"FERRITE_CUDA_EXACT", b(s.cuda_exact)},
          {"FERRITE_CUDA_GRAPHS", b(s.cuda_graphs)},
          {"FERRITE_CUDA_FUSE", fuse},
          {"FERRITE_CUDA_PDL", pdl},
          {"FERRITE_CUDA_ATTN_WARPS", std::to_string(s.cuda_attn_warps)},
          {"FERRITE_CUDA_MMA_ROWS", std::to_string(s.cuda_mma_min_rows) + ":" + std::to_string(s.cuda_mma_max_rows)}};
}

}  // namespace ferrite::backend
