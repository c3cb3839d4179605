// Locating the shared test data (../shared): models, vocabularies, goldens.
//
// The root is $FERRITE_SHARED when set, else the `shared` folder beside the
// repository. When a file is missing the test is skipped on a developer's
// machine but fails in CI (CI=true), where the data must be present.
#pragma once

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace ferrite::test {

// Root of the shared data tree.
std::filesystem::path shared_root();

// shared_root() / relative.
std::filesystem::path shared_path(const std::string& relative);

// True when running under CI (environment CI=true).
bool in_ci();

// Reads a whole file into a string; throws std::runtime_error when unreadable.
std::string read_file(const std::filesystem::path& path);

}  // namespace ferrite::test

// Resolves `rel` under the shared root into `var`. A missing file skips the
// test locally and fails it in CI.
#define FERRITE_SHARED_FILE(var, rel)                                                   \
  const std::filesystem::path var = ::ferrite::test::shared_path(rel);                  \
  do {                                                                                  \
    if (!std::filesystem::exists(var)) {                                                \
      if (::ferrite::test::in_ci()) {                                                   \
        FAIL() << "shared test data missing: " << var;                                  \
      } else {                                                                          \
        GTEST_SKIP() << "shared test data missing: " << var;                            \
      }                                                                                 \
    }                                                                                   \
  } while (0)
