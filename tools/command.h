// Subcommands of the `ferrite` binary register themselves here: each
// tools/<name>.cpp defines one `static CommandRegistrar` that adds its
// CLI11 subcommand and the function that runs it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/error.h"

namespace ferrite::tools {

struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub` and returns the action to run when it is chosen.
  // The action returns the process exit status.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

// A command line that names too little or contradicts itself (no model, two
// models): `ferrite` reports it as a usage error (exit status 2).
class UsageError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace ferrite::tools
