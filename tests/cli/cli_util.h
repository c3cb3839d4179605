// Runs the `ferrite` binary built alongside the tests and captures its output.
#pragma once

#include <string>
#include <vector>

namespace ferrite::test {

struct CommandResult {
  int status = -1;     // exit status (128+signal when killed)
  std::string out;     // stdout
  std::string err;     // stderr
};

// Runs FERRITE_BINARY with `args` (no shell), optional stdin text.
CommandResult run_ferrite(const std::vector<std::string>& args, const std::string& stdin_text = "");

}  // namespace ferrite::test
