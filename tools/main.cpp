// The `ferrite` binary: dispatches to the subcommands registered in
// tools/*.cpp. Errors from the library arrive as exceptions and leave here as
// one line on stderr and a non-zero status.
#include <algorithm>
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "command.h"
#include "core/error.h"
#include "cpu/features.h"

namespace ferrite::tools {
std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}
std::vector<OptionAlias>& option_aliases() {
  static std::vector<OptionAlias> aliases;
  return aliases;
}
}  // namespace ferrite::tools

int main(int argc, char** argv) {
  using namespace ferrite::tools;
  CLI::App app{"ferrite: run large language models from GGUF files"};
  app.require_subcommand(1);
  // FERRITE_ISA caps the kernels' instruction-set level for the whole run.
  try {
    ferrite::cpu::apply_isa_env();
  } catch (const ferrite::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  app.set_version_flag("--version", std::function<std::string()>([] {
                         return "ferrite 0.1.0\nisa: " + ferrite::cpu::isa_summary();
                       }));

  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> actions;
  for (auto& cmd : commands) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    actions.emplace_back(sub, cmd.setup(*sub));
  }

  // Rewrite aliased options (see OptionAlias) after their subcommand's name.
  const std::string command = argc > 1 ? argv[1] : "";
  for (int i = 2; i < argc; ++i) {
    for (const OptionAlias& a : option_aliases()) {
      if (a.command == command && a.from == argv[i]) argv[i] = const_cast<char*>(a.to.c_str());
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
  } catch (const ferrite::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 1;
}
