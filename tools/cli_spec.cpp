#include "cli_spec.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "command.h"
#include "core/error.h"
#include "llama_flags.h"

namespace ferrite::tools {
namespace {

OptionSpec option_spec(const CLI::Option& o) {
  OptionSpec s;
  for (const std::string& n : o.get_snames()) s.names.push_back("-" + n);
  for (const std::string& n : o.get_lnames()) s.names.push_back("--" + n);
  // llama.cpp's single-dash spellings that become this option (llama_flags.h).
  for (const LlamaSpelling& l : llama_short_spellings()) {
    if (std::find(s.names.begin(), s.names.end(), l.ferrite) != s.names.end()) s.names.push_back(l.llama);
  }
  s.help = o.get_description();
  if (o.get_type_size() != 0) s.value = o.get_type_name().empty() ? "VALUE" : o.get_type_name();
  s.group = o.get_group();
  return s;
}

}  // namespace

std::vector<CommandSpec> cli_spec() {
  std::vector<CommandSpec> out;
  for (const Command& c : command_registry()) {
    CLI::App app{c.help, "ferrite " + c.name};
    const std::function<int()> unused = c.setup(app);  // declares the options; never run
    CommandSpec spec{c.name, c.help, {}, {}};
    for (const CLI::Option* o : app.get_options()) {
      if (o->get_group().empty()) continue;  // hidden
      if (!o->nonpositional()) {
        spec.positionals.push_back(o->get_name());
        continue;
      }
      spec.options.push_back(option_spec(*o));
    }
    out.push_back(std::move(spec));
  }
  std::sort(out.begin(), out.end(), [](const CommandSpec& a, const CommandSpec& b) { return a.name < b.name; });
  return out;
}

void write_text_file(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError(path, "cannot create");
  out << text;
  out.close();
  if (!out) throw IoError(path, "write failed");
}

}  // namespace ferrite::tools
