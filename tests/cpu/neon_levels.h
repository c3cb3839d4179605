// The aarch64 levels this CPU has, for the NEON kernel tests (neon_*_test.cpp):
// each test runs its checks at every one of them (Neon, and NeonI8mm where
// HWCAP2 reports the int8 matrix multiply; qemu-aarch64's default CPU has both).
#pragma once

#include <vector>

#include <gtest/gtest.h>

#include "cpu/features.h"

namespace ferrite::cpu::test {

inline bool have_neon() { return is_neon(detected_isa()); }

// Neon, then NeonI8mm when detected; empty on other targets.
inline std::vector<Isa> neon_levels() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Neon, Isa::NeonI8mm}) {
    if (have_neon() && static_cast<int>(isa) <= static_cast<int>(detected_isa())) out.push_back(isa);
  }
  return out;
}

// Restores the active level when a test ends.
class IsaGuard {
 public:
  IsaGuard() : saved_(active_isa()) {}
  ~IsaGuard() { set_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

}  // namespace ferrite::cpu::test

#define SKIP_WITHOUT_NEON()                                  \
  if (!::ferrite::cpu::test::have_neon()) GTEST_SKIP()       \
      << "no NEON level (x86-64 build or CPU without dotprod/fp16)"
