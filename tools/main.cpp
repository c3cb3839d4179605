// The `ferrite` binary: dispatches to the subcommands registered in
// tools/*.cpp. Errors from the library arrive as exceptions and leave here as
// one line on stderr and status 1; a command line that does not parse
// (unknown command or option, a bad value, a llama.cpp option the command
// does not implement) exits with status 2.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "command.h"
#include "core/error.h"
#include "cpu/features.h"
#include "llama_flags.h"
#include "version.h"

namespace ferrite::tools {

std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}

namespace {

constexpr int kUsageError = 2;

// Edit distance, for "did you mean".
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

void print_commands(std::FILE* out) {
  std::fprintf(out, "ferrite: run large language models from GGUF files\n\nusage: ferrite COMMAND [options]\n\ncommands:\n");
  for (const Command& c : command_registry()) std::fprintf(out, "  %-14s %s\n", c.name.c_str(), c.help.c_str());
  std::fprintf(out,
               "\n`ferrite COMMAND --help` lists a command's options; they follow llama.cpp's spellings "
               "(-ngl, -fa, -cnv, -sys, -hf REPO[:QUANT], ...).\n`ferrite --version`: version, commit, backends and "
               "instruction sets.\n");
}

int unknown_command(const std::string& name) {
  size_t best = SIZE_MAX;
  for (const Command& c : command_registry()) best = std::min(best, distance(name, c.name));
  std::fprintf(stderr, "ferrite: unknown command '%s'", name.c_str());
  if (best <= std::max<size_t>(2, name.size() / 3)) {
    std::string names;  // every command that near
    for (const Command& c : command_registry()) {
      if (distance(name, c.name) == best) names += (names.empty() ? "'" : " or '") + c.name + "'";
    }
    std::fprintf(stderr, "; did you mean %s?", names.c_str());
  }
  std::fprintf(stderr, "\n`ferrite help` lists the commands.\n");
  return kUsageError;
}

int usage_error(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "ferrite %s: %s\n`ferrite %s --help` lists its options.\n", command.c_str(), message.c_str(),
               command.c_str());
  return kUsageError;
}

}  // namespace
}  // namespace ferrite::tools

int main(int argc, char** argv) {
  using namespace ferrite::tools;
  // FERRITE_ISA caps the kernels' instruction-set level for the whole run.
  try {
    ferrite::cpu::apply_isa_env();
  } catch (const ferrite::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  auto& commands = command_registry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });

  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
    if (args.size() >= 2 && args[0] == "help") {
      args = {args[1], "--help"};  // `ferrite help run`
    } else {
      print_commands(stdout);
      return 0;
    }
  }
  if (args[0] == "--version" || args[0] == "-v" || args[0] == "version") {
    std::fputs(version_text().c_str(), stdout);
    return 0;
  }
  const std::string name = args[0];
  const auto cmd = std::find_if(commands.begin(), commands.end(), [&](const Command& c) { return c.name == name; });
  if (cmd == commands.end()) {
    if (!name.empty() && name[0] == '-') return usage_error("", "options go after the command (`ferrite help`)");
    return unknown_command(name);
  }

  CLI::App sub{cmd->help, "ferrite " + cmd->name};
  std::function<int()> action = cmd->setup(sub);
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (auto error = rewrite_llama_flags(sub, rest)) return usage_error(name, *error);
  try {
    std::reverse(rest.begin(), rest.end());  // CLI11 takes its arguments last first
    sub.parse(rest);
  } catch (const CLI::CallForHelp& e) {
    return sub.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return sub.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(name, e.what());
  }
  try {
    return action();
  } catch (const UsageError& e) {
    return usage_error(name, e.what());
  } catch (const ferrite::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  }
  return 1;
}
