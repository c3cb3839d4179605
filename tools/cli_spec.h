// The command line as data: every registered command (command.h) with its
// options, read from the CLI11 definitions the commands build. The shell
// completions and the man page (completion.cpp, manpage.cpp) are generated
// from it, so they list exactly what the binary accepts.
#pragma once

#include <string>
#include <vector>

namespace ferrite::tools {

struct OptionSpec {
  std::vector<std::string> names;  // "-m", "--model", and llama.cpp's single-dash spellings ("-ngl")
  std::string help;
  std::string value;  // the value's name ("TEXT", "INT"); empty for a flag
  std::string group;  // the --help section ("Sampling"); "Options" by default
};

struct CommandSpec {
  std::string name;
  std::string help;
  std::vector<std::string> positionals;  // "model", ...
  std::vector<OptionSpec> options;
};

// Every command, sorted by name.
std::vector<CommandSpec> cli_spec();

// Writes `text` to `path` ("-" or empty: stdout). Throws IoError.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace ferrite::tools
