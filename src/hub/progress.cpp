#include "hub/progress.h"

#include <unistd.h>

#include <algorithm>

namespace ferrite::hub {
namespace {

constexpr auto kBarRedrawInterval = std::chrono::milliseconds(100);
constexpr int kBarWidth = 30;
constexpr int kLineSteps = 10;                           // lines at 10%, 20%, ...
constexpr uint64_t kLineStepBytes = 64ull * 1024 * 1024;  // when the total is unknown

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::string format_bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t unit = 0;
  while (v >= 1024.0 && unit + 1 < std::size(kUnits)) {
    v /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  }
  return buf;
}

ProgressReporter::ProgressReporter(std::string label, ProgressMode mode, std::FILE* out)
    : label_(terminal_safe(label)), mode_(mode), out_(out), start_(std::chrono::steady_clock::now()) {
  if (mode_ == ProgressMode::kAuto) {
    mode_ = (out_ != nullptr && isatty(fileno(out_))) ? ProgressMode::kBar : ProgressMode::kLines;
  }
  if (out_ == nullptr) mode_ = ProgressMode::kSilent;
}

void ProgressReporter::update(uint64_t done, uint64_t total) {
  if (start_bytes_ == UINT64_MAX) start_bytes_ = done;
  if (mode_ == ProgressMode::kBar) {
    const auto now = std::chrono::steady_clock::now();
    if (drawn_ && now - last_draw_ < kBarRedrawInterval) return;
    last_draw_ = now;
    draw_bar(done, total);
  } else if (mode_ == ProgressMode::kLines) {
    const int step = total > 0 ? static_cast<int>(done * kLineSteps / total) : static_cast<int>(done / kLineStepBytes);
    if (step == last_step_) return;
    last_step_ = step;
    print_line(done, total);
  }
}

void ProgressReporter::finish(uint64_t done, uint64_t total) {
  if (start_bytes_ == UINT64_MAX) start_bytes_ = done;
  if (mode_ == ProgressMode::kBar) {
    draw_bar(done, total);
    break_line();
  } else if (mode_ == ProgressMode::kLines) {
    if (total == 0 || static_cast<int>(done * kLineSteps / total) != last_step_) print_line(done, total);
  }
  if (out_ != nullptr) std::fflush(out_);
}

void ProgressReporter::break_line() {
  if (!line_open_) return;
  std::fputc('\n', out_);
  std::fflush(out_);
  line_open_ = false;
}

void ProgressReporter::draw_bar(uint64_t done, uint64_t total) {
  drawn_ = true;
  line_open_ = true;
  const double elapsed = std::max(seconds_since(start_), 1e-3);
  const double rate = static_cast<double>(done - std::min(done, start_bytes_)) / elapsed;  // bytes/s
  std::string bar;
  if (total > 0) {
    const int filled = static_cast<int>(std::min<uint64_t>(done, total) * kBarWidth / total);
    bar.assign(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kBarWidth - filled), '-');
    std::fprintf(out_, "\r%s [%s] %3d%% %s / %s  %s/s   ", label_.c_str(), bar.c_str(),
                 static_cast<int>(std::min<uint64_t>(done, total) * 100 / total), format_bytes(done).c_str(),
                 format_bytes(total).c_str(), format_bytes(static_cast<uint64_t>(rate)).c_str());
  } else {
    std::fprintf(out_, "\r%s %s  %s/s   ", label_.c_str(), format_bytes(done).c_str(),
                 format_bytes(static_cast<uint64_t>(rate)).c_str());
  }
  std::fflush(out_);
}

void ProgressReporter::print_line(uint64_t done, uint64_t total) {
  if (total > 0) {
    std::fprintf(out_, "%s: %3d%% (%s of %s)\n", label_.c_str(),
                 static_cast<int>(std::min<uint64_t>(done, total) * 100 / total), format_bytes(done).c_str(),
                 format_bytes(total).c_str());
  } else {
    std::fprintf(out_, "%s: %s\n", label_.c_str(), format_bytes(done).c_str());
  }
  std::fflush(out_);
}

std::string terminal_safe(std::string_view text, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes));
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence, not a C1 control (U+0080..U+009F).
    const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = len != 0 && i + len <= text.size() && c <= 0xF4;
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) ok = false;
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  if (i < text.size()) out += "...";
  return out;
}

}  // namespace ferrite::hub
