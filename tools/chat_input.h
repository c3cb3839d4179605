// Reading the user's messages for `ferrite chat`: a line editor in raw mode
// when stdin and stdout are terminals, plain line reading otherwise (pipes,
// files: scripted chats). A message continues on the next line when a line
// ends in a backslash, and a line holding only """ opens a block that runs to
// the next such line.
#pragma once

#include <atomic>
#include <string>

#include "line_editor.h"

namespace ferrite::tools {

class ChatInput {
 public:
  enum class Result { kMessage, kEof, kInterrupt };

  // `interrupted`: set by the SIGINT handler; a read cut short by the signal
  // (plain mode) reports kInterrupt.
  explicit ChatInput(const std::atomic<bool>& interrupted);

  bool interactive() const { return interactive_; }
  Result read_message(std::string& out);

 private:
  enum class LineResult { kLine, kEof, kInterrupt };
  LineResult read_line(const std::string& prompt, std::string& out);
  LineResult read_line_tty(const std::string& prompt, std::string& out);
  LineResult read_line_plain(std::string& out);

  const std::atomic<bool>& interrupted_;
  bool interactive_;
  LineEditor editor_;
  std::string pending_;  // plain mode: bytes read past the last line
  bool at_eof_ = false;
};

}  // namespace ferrite::tools
