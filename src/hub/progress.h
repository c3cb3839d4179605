// Download progress on stderr: a redrawn bar when stderr is a terminal,
// otherwise one line every tenth of the way (or every kLineStepBytes when the
// total is unknown), so that logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace ferrite::hub {

enum class ProgressMode {
  kAuto,    // bar on a terminal, lines otherwise
  kBar,     // always the redrawn bar
  kLines,   // always occasional lines
  kSilent,  // nothing
};

class ProgressReporter {
 public:
  ProgressReporter(std::string label, ProgressMode mode, std::FILE* out = stderr);

  // `done` bytes of `total` are on disk; total 0 means unknown. Cheap to call
  // for every chunk: output is rate-limited.
  void update(uint64_t done, uint64_t total);
  // Final state: draws 100% and ends the line.
  void finish(uint64_t done, uint64_t total);
  // Ends a half-drawn bar line so that a notice can be printed below it.
  void break_line();

 private:
  void draw_bar(uint64_t done, uint64_t total);
  void print_line(uint64_t done, uint64_t total);

  std::string label_;
  ProgressMode mode_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_{};
  uint64_t start_bytes_ = UINT64_MAX;  // bytes already present when this run began
  int last_step_ = -1;                 // last tenth (or size step) printed in line mode
  bool drawn_ = false;
  bool line_open_ = false;  // a bar is on the current line
};

// "1.13 MiB", "512 B": sizes for humans.
std::string format_bytes(uint64_t n);

// Text from elsewhere (a server's error message, a file name from a
// listing) made safe to print on a terminal: control characters (C0, DEL,
// C1, so no escape sequence gets through) become '?', invalid UTF-8 bytes
// too, and the text is cut to `max_bytes`.
std::string terminal_safe(std::string_view text, size_t max_bytes = 1024);

}  // namespace ferrite::hub
