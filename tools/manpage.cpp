// `ferrite manpage [-o FILE]`: the man page ferrite(1) in roff, generated
// from the commands' definitions (cli_spec.h); the build writes it to
// build/share/man/man1/ferrite.1 and `cmake --install` installs it.
#include <string>

#include "cli_spec.h"
#include "command.h"
#include "core/version.h"

namespace ferrite::tools {
namespace {

// Text for roff: backslashes and hyphens escaped, no line starting with a
// control character.
std::string roff(const std::string& t) {
  std::string out;
  bool line_start = true;
  for (char ch : t) {
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    if (ch == '\\') {
      out += "\\e";
    } else if (ch == '-') {
      out += "\\-";
    } else {
      out += ch;
    }
    line_start = ch == '\n';
  }
  return out;
}

std::string man_page(const std::vector<CommandSpec>& spec) {
  std::string s = std::string(".TH FERRITE 1 \"\" \"ferrite ") + kVersion + "\" \"User Commands\"\n";
  s += ".SH NAME\nferrite \\- run large language models from GGUF files\n";
  s += ".SH SYNOPSIS\n.B ferrite\n.I COMMAND\n.RI [ options ]\n.br\n.B ferrite \\-\\-version\n";
  s += ".SH DESCRIPTION\n"
       "ferrite runs large language models stored as GGUF files on CPUs and GPUs. Every command takes the model "
       "as its first argument or with \\fB\\-m\\fR, by path or by name (\\fBferrite list\\fR). Options follow "
       "llama.cpp's spellings; a llama.cpp option a command does not implement is refused with "
       "\"not supported\" (status 2).\n";
  s += ".SH COMMANDS\n";
  for (const CommandSpec& c : spec) {
    s += ".TP\n.B " + c.name + "\n" + roff(c.help) + "\n";
  }
  for (const CommandSpec& c : spec) {
    s += ".SH \"" + roff("FERRITE " + c.name) + "\"\n" + roff(c.help) + ".\n";
    s += ".PP\n.B ferrite " + c.name + "\n";
    for (const std::string& p : c.positionals) s += ".RI [ " + roff(p) + " ]\n";
    if (!c.options.empty()) s += ".RI [ options ]\n";
    std::string group;
    for (const OptionSpec& o : c.options) {
      if (o.group != group && !o.group.empty()) {
        group = o.group;
        s += ".SS \"" + roff(group) + "\"\n";
      }
      s += ".TP\n";
      std::string names;
      for (const std::string& n : o.names)
        names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
      if (!o.value.empty()) names += " \\fI" + roff(o.value) + "\\fR";
      s += names + "\n" + roff(o.help) + "\n";
    }
  }
  s += ".SH EXIT STATUS\n0 on success, 1 when a command fails (the error is one line on stderr), "
       "2 for a command line that does not parse.\n";
  s += ".SH SEE ALSO\n\\fBferrite \\fICOMMAND\\fB \\-\\-help\\fR lists a command's options.\n";
  return s;
}

const CommandRegistrar kManpage({"manpage", "Print the man page ferrite(1) (roff)",
                                 [](CLI::App& sub) -> std::function<int()> {
                                   auto out = std::make_shared<std::string>("-");
                                   sub.add_option("-o,--output", *out, "Write to FILE instead of stdout");
                                   return [out] {
                                     write_text_file(*out, man_page(cli_spec()));
                                     return 0;
                                   };
                                 }});

}  // namespace
}  // namespace ferrite::tools
