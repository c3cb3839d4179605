#include "quant_progress.h"

#include <unistd.h>

#include <cstdio>

namespace ferrite::tools {

namespace {
constexpr int kBarWidth = 30;
}

Progress::Progress(uint64_t total) : total_(total == 0 ? 1 : total), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::update(uint64_t done, const std::string& what, const std::string& detail) {
  const double frac = static_cast<double>(done) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * kBarWidth);
  if (tty_) {
    std::fprintf(stderr, "\r[%-*s] %3d%% %-40.40s %-8s", kBarWidth, std::string(static_cast<size_t>(filled), '#').c_str(),
                 static_cast<int>(frac * 100.0), what.c_str(), detail.c_str());
    std::fflush(stderr);
    return;
  }
  const int decile = static_cast<int>(frac * 10.0);
  if (decile != last_decile_) {
    last_decile_ = decile;
    std::fprintf(stderr, "%3d%% %s %s\n", decile * 10, what.c_str(), detail.c_str());
  }
}

void Progress::finish() {
  if (tty_) std::fprintf(stderr, "\r[%s] 100%%%*s\n", std::string(kBarWidth, '#').c_str(), 50, "");
}

}  // namespace ferrite::tools
