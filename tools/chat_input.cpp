#include "chat_input.h"

#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace ferrite::tools {
namespace {

constexpr const char* kPrompt = "> ";
constexpr const char* kContinuationPrompt = "... ";
constexpr std::string_view kBlockFence = "\"\"\"";
constexpr int kDefaultColumns = 80;
constexpr size_t kReadChunk = 4096;

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

int terminal_columns() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return kDefaultColumns;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The terminal in raw mode for the lifetime of the object: bytes arrive one
// by one, unechoed, and Ctrl-C is a byte rather than a signal. Output
// processing stays on ("\n" moves to the next line's start).
class RawMode {
 public:
  RawMode() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_iflag &= ~static_cast<tcflag_t>(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
    raw.c_cflag |= CS8;
    raw.c_lflag &= ~static_cast<tcflag_t>(ECHO | ICANON | IEXTEN | ISIG);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
  }
  ~RawMode() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  }
  RawMode(const RawMode&) = delete;
  RawMode& operator=(const RawMode&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

}  // namespace

ChatInput::ChatInput(const std::atomic<bool>& interrupted)
    : interrupted_(interrupted), interactive_(::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO)) {}

ChatInput::LineResult ChatInput::read_line(const std::string& prompt, std::string& out) {
  return interactive_ ? read_line_tty(prompt, out) : read_line_plain(out);
}

ChatInput::LineResult ChatInput::read_line_tty(const std::string& prompt, std::string& out) {
  RawMode raw;
  const int columns = terminal_columns();
  editor_.start();
  write_all(STDOUT_FILENO, render_line(prompt, "", 0, columns));
  for (;;) {
    unsigned char c = 0;
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      write_all(STDOUT_FILENO, "\n");
      return LineResult::kEof;
    }
    switch (editor_.feed(c)) {
      case LineEditor::Event::kNone:
        break;
      case LineEditor::Event::kChanged:
        write_all(STDOUT_FILENO, render_line(prompt, editor_.line(), editor_.cursor(), columns));
        break;
      case LineEditor::Event::kClearScreen:
        write_all(STDOUT_FILENO, "\x1b[H\x1b[2J");
        write_all(STDOUT_FILENO, render_line(prompt, editor_.line(), editor_.cursor(), columns));
        break;
      case LineEditor::Event::kSubmit:
        out = editor_.line();
        editor_.add_history(out);
        write_all(STDOUT_FILENO, "\n");
        return LineResult::kLine;
      case LineEditor::Event::kEof:
        write_all(STDOUT_FILENO, "\n");
        return LineResult::kEof;
      case LineEditor::Event::kInterrupt:
        write_all(STDOUT_FILENO, "^C\n");
        return LineResult::kInterrupt;
    }
  }
}

ChatInput::LineResult ChatInput::read_line_plain(std::string& out) {
  for (;;) {
    const size_t nl = pending_.find('\n');
    if (nl != std::string::npos) {
      out = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      if (!out.empty() && out.back() == '\r') out.pop_back();
      return LineResult::kLine;
    }
    if (at_eof_) {
      if (pending_.empty()) return LineResult::kEof;
      out.swap(pending_);
      pending_.clear();
      return LineResult::kLine;
    }
    char buf[kReadChunk];
    const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
    if (n < 0 && errno == EINTR) {
      if (interrupted_.load()) return LineResult::kInterrupt;
      continue;
    }
    if (n <= 0) {
      at_eof_ = true;
      continue;
    }
    pending_.append(buf, static_cast<size_t>(n));
  }
}

ChatInput::Result ChatInput::read_message(std::string& out) {
  out.clear();
  std::string line;
  LineResult r = read_line(kPrompt, line);
  if (r == LineResult::kEof) return Result::kEof;
  if (r == LineResult::kInterrupt) return Result::kInterrupt;

  if (trim(line) == kBlockFence) {  // """ ... """
    bool first = true;
    for (;;) {
      r = read_line(kContinuationPrompt, line);
      if (r == LineResult::kInterrupt) return Result::kInterrupt;
      if (r == LineResult::kEof || trim(line) == kBlockFence) return Result::kMessage;
      if (!first) out += '\n';
      out += line;
      first = false;
    }
  }
  while (!line.empty() && line.back() == '\\') {  // continued on the next line
    line.pop_back();
    out += line;
    out += '\n';
    r = read_line(kContinuationPrompt, line);
    if (r == LineResult::kInterrupt) return Result::kInterrupt;
    if (r == LineResult::kEof) return Result::kMessage;
  }
  out += line;
  return Result::kMessage;
}

}  // namespace ferrite::tools
