#include "line_editor.h"

#include <utf8proc.h>

#include <algorithm>

namespace ferrite::tools {
namespace {

// Control bytes (Ctrl-<letter> is the letter's position in the alphabet).
constexpr unsigned char kCtrlA = 1, kCtrlB = 2, kCtrlC = 3, kCtrlD = 4, kCtrlE = 5, kCtrlF = 6, kCtrlH = 8,
                        kCtrlK = 11, kCtrlL = 12, kCtrlN = 14, kCtrlP = 16, kCtrlU = 21, kCtrlW = 23;
constexpr unsigned char kLineFeed = '\n', kReturn = '\r', kEscape = 27, kDelete = 127;
// Parameters of "ESC [ n ~" keys.
constexpr int kKeyHome1 = 1, kKeyDelete = 3, kKeyEnd4 = 4, kKeyHome7 = 7, kKeyEnd8 = 8;
// Digits of a CSI parameter past this are ignored (no key needs more).
constexpr int kMaxEscapeParam = 1000;

bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n'; }

struct Glyph {
  size_t begin;  // byte offset
  int width;     // columns
};

std::vector<Glyph> glyphs(const std::string& text) {
  std::vector<Glyph> out;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {  // an invalid byte shows as one column
      out.push_back({i, 1});
      ++i;
      continue;
    }
    out.push_back({i, cp < 0x20 ? 1 : std::max(0, utf8proc_charwidth(cp))});
    i += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace

int display_width(const std::string& text) {
  int w = 0;
  for (const Glyph& g : glyphs(text)) w += g.width;
  return w;
}

void LineEditor::start() {
  line_.clear();
  cursor_ = 0;
  esc_ = Escape::kNone;
  hist_pos_ = history_.size();
  draft_.clear();
}

void LineEditor::add_history(const std::string& entry) {
  if (entry.empty() || (!history_.empty() && history_.back() == entry)) return;
  history_.push_back(entry);
}

size_t LineEditor::prev_char(size_t pos) const {
  if (pos == 0) return 0;
  --pos;
  while (pos > 0 && is_continuation(static_cast<unsigned char>(line_[pos]))) --pos;
  return pos;
}

size_t LineEditor::next_char(size_t pos) const {
  if (pos >= line_.size()) return line_.size();
  ++pos;
  while (pos < line_.size() && is_continuation(static_cast<unsigned char>(line_[pos]))) ++pos;
  return pos;
}

size_t LineEditor::prev_word(size_t pos) const {
  while (pos > 0 && is_space(line_[pos - 1])) --pos;
  while (pos > 0 && !is_space(line_[pos - 1])) --pos;
  return pos;
}

size_t LineEditor::next_word(size_t pos) const {
  while (pos < line_.size() && is_space(line_[pos])) ++pos;
  while (pos < line_.size() && !is_space(line_[pos])) ++pos;
  return pos;
}

LineEditor::Event LineEditor::move_to(size_t pos) {
  if (pos == cursor_) return Event::kNone;
  cursor_ = pos;
  return Event::kChanged;
}

LineEditor::Event LineEditor::erase(size_t from, size_t to) {
  if (from >= to) return Event::kNone;
  line_.erase(from, to - from);
  cursor_ = from;
  return Event::kChanged;
}

LineEditor::Event LineEditor::history_step(int direction) {
  if (direction < 0) {
    if (hist_pos_ == 0) return Event::kNone;
    if (hist_pos_ == history_.size()) draft_ = line_;
    --hist_pos_;
  } else {
    if (hist_pos_ >= history_.size()) return Event::kNone;
    ++hist_pos_;
  }
  line_ = hist_pos_ == history_.size() ? draft_ : history_[hist_pos_];
  cursor_ = line_.size();
  return Event::kChanged;
}

LineEditor::Event LineEditor::feed(unsigned char byte) {
  switch (esc_) {
    case Escape::kNone:
      return key(byte);
    case Escape::kEsc:
      esc_ = Escape::kNone;
      if (byte == '[') {
        esc_ = Escape::kCsi;
        esc_param_ = 0;
      } else if (byte == 'O') {
        esc_ = Escape::kSs3;
      } else if (byte == 'b' || byte == 'B') {
        return move_to(prev_word(cursor_));
      } else if (byte == 'f' || byte == 'F') {
        return move_to(next_word(cursor_));
      }
      return Event::kNone;
    case Escape::kCsi:
      if (byte >= '0' && byte <= '9') {
        if (esc_param_ < kMaxEscapeParam) esc_param_ = esc_param_ * 10 + (byte - '0');
        return Event::kNone;
      }
      if (byte == ';') {  // modifiers follow (ESC [ 1 ; 5 C): keep the key, drop them
        esc_param_ = 0;
        return Event::kNone;
      }
      esc_ = Escape::kNone;
      return escape_final(static_cast<char>(byte), esc_param_);
    case Escape::kSs3:
      esc_ = Escape::kNone;
      return escape_final(static_cast<char>(byte), 0);
  }
  return Event::kNone;
}

LineEditor::Event LineEditor::escape_final(char final_byte, int param) {
  switch (final_byte) {
    case 'A': return history_step(-1);
    case 'B': return history_step(+1);
    case 'C': return move_to(next_char(cursor_));
    case 'D': return move_to(prev_char(cursor_));
    case 'H': return move_to(0);
    case 'F': return move_to(line_.size());
    case '~':
      if (param == kKeyHome1 || param == kKeyHome7) return move_to(0);
      if (param == kKeyEnd4 || param == kKeyEnd8) return move_to(line_.size());
      if (param == kKeyDelete) return erase(cursor_, next_char(cursor_));
      return Event::kNone;
    default:
      return Event::kNone;
  }
}

LineEditor::Event LineEditor::key(unsigned char byte) {
  switch (byte) {
    case kReturn:
    case kLineFeed: return Event::kSubmit;
    case kCtrlA: return move_to(0);
    case kCtrlE: return move_to(line_.size());
    case kCtrlB: return move_to(prev_char(cursor_));
    case kCtrlF: return move_to(next_char(cursor_));
    case kCtrlH:
    case kDelete: return erase(prev_char(cursor_), cursor_);
    case kCtrlD:
      if (line_.empty()) return Event::kEof;
      return erase(cursor_, next_char(cursor_));
    case kCtrlU: return erase(0, cursor_);
    case kCtrlK: return erase(cursor_, line_.size());
    case kCtrlW: return erase(prev_word(cursor_), cursor_);
    case kCtrlP: return history_step(-1);
    case kCtrlN: return history_step(+1);
    case kCtrlC: return Event::kInterrupt;
    case kCtrlL: return Event::kClearScreen;
    case kEscape: esc_ = Escape::kEsc; return Event::kNone;
    default: break;
  }
  if (byte < 0x20) return Event::kNone;  // other control keys (Tab, ...) are ignored
  line_.insert(line_.begin() + static_cast<std::ptrdiff_t>(cursor_), static_cast<char>(byte));
  ++cursor_;
  return Event::kChanged;
}

std::string render_line(const std::string& prompt, const std::string& line, size_t cursor, int columns) {
  const int prompt_w = display_width(prompt);
  // Columns for the line; the last one of the row stays free so the cursor
  // never triggers the terminal's automatic wrap.
  const int avail = std::max(1, columns - prompt_w - 1);
  const std::vector<Glyph> g = glyphs(line);
  size_t ci = 0;  // glyph at the cursor
  while (ci < g.size() && g[ci].begin < cursor) ++ci;

  size_t first = 0;
  int cursor_col = 0;
  for (size_t i = 0; i < ci; ++i) cursor_col += g[i].width;
  while (cursor_col > avail && first < ci) cursor_col -= g[first++].width;
  size_t last = first;
  for (int w = 0; last < g.size() && w + g[last].width <= avail; ++last) w += g[last].width;

  const size_t b0 = first < g.size() ? g[first].begin : line.size();
  const size_t b1 = last < g.size() ? g[last].begin : line.size();
  std::string out = "\r" + prompt + line.substr(b0, b1 - b0) + "\x1b[0K\r";
  const int col = prompt_w + cursor_col;
  if (col > 0) out += "\x1b[" + std::to_string(col) + "C";
  return out;
}

}  // namespace ferrite::tools
