// A readline-style line editor as a pure state machine: bytes from a raw-mode
// terminal go in one at a time (feed), the edited line and its cursor come
// out, and render() turns them into the escape sequences that redraw the
// line. No terminal I/O happens here (see terminal.h), so key handling is
// testable without a TTY.
//
// Keys: printable text (UTF-8) inserts; Enter submits; Left/Right and
// Ctrl-B/F move by character, Alt-B/F by word; Home/End and Ctrl-A/E;
// Backspace/Ctrl-H and Delete; Ctrl-U/K kill to the start/end; Ctrl-W kills
// the previous word; Up/Down and Ctrl-P/N walk the history; Ctrl-D deletes
// under the cursor, or ends input on an empty line; Ctrl-C interrupts;
// Ctrl-L clears the screen.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ferrite::tools {

class LineEditor {
 public:
  enum class Event {
    kNone,         // nothing visible changed (or a sequence is incomplete)
    kChanged,      // the line or cursor changed: redraw
    kSubmit,       // Enter: line() is the input
    kEof,          // Ctrl-D on an empty line
    kInterrupt,    // Ctrl-C
    kClearScreen,  // Ctrl-L: clear, then redraw
  };

  // Starts a new, empty line (history position at the end).
  void start();
  Event feed(unsigned char byte);

  const std::string& line() const { return line_; }
  size_t cursor() const { return cursor_; }  // byte offset into line()

  // Appends to the history (empty lines and repeats of the last are skipped).
  void add_history(const std::string& entry);
  const std::vector<std::string>& history() const { return history_; }

 private:
  Event key(unsigned char byte);
  Event escape_final(char final_byte, int param);
  Event move_to(size_t pos);
  Event erase(size_t from, size_t to);
  Event history_step(int direction);
  size_t prev_char(size_t pos) const;
  size_t next_char(size_t pos) const;
  size_t prev_word(size_t pos) const;
  size_t next_word(size_t pos) const;

  enum class Escape { kNone, kEsc, kCsi, kSs3 };
  Escape esc_ = Escape::kNone;
  int esc_param_ = 0;

  std::string line_;
  size_t cursor_ = 0;
  std::vector<std::string> history_;
  size_t hist_pos_ = 0;  // == history_.size(): the line being typed
  std::string draft_;    // the line being typed while browsing the history
};

// Escape sequences that redraw `prompt` + `line` on the current terminal row
// of `columns` columns with the cursor at byte `cursor`. Lines wider than the
// row scroll horizontally to keep the cursor visible.
std::string render_line(const std::string& prompt, const std::string& line, size_t cursor, int columns);

// Terminal columns taken by UTF-8 text (wide characters count 2, combining 0).
int display_width(const std::string& text);

}  // namespace ferrite::tools
