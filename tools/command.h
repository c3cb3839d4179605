// Subcommands of the `ferrite` binary register themselves here: each
// tools/<name>.cpp defines one `static CommandRegistrar` that adds its
// CLI11 subcommand and the function that runs it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ferrite::tools {

struct Command {
  std::string name;
  std::string help;
  // Adds options to `sub` and returns the action to run when it is chosen.
  // The action returns the process exit status.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { command_registry().push_back(std::move(c)); }
};

// Single-dash option names longer than one letter (llama.cpp's `-sys`), which
// CLI11 cannot declare: main() rewrites an argument equal to `from` that
// follows the subcommand `command` into `to` before parsing.
struct OptionAlias {
  std::string command;
  std::string from;
  std::string to;
};

std::vector<OptionAlias>& option_aliases();

struct OptionAliasRegistrar {
  explicit OptionAliasRegistrar(OptionAlias a) { option_aliases().push_back(std::move(a)); }
};

}  // namespace ferrite::tools
