#include "load_bar.h"

#include <unistd.h>

#include <cstdio>

#include "model/load_progress.h"

namespace ferrite::tools {
namespace {

constexpr int kBarWidth = 30;
constexpr double kMiB = 1024.0 * 1024.0;

// Redraws only when the whole percentage changes (and at 0% / 100%).
void draw(uint64_t done, uint64_t total, int& last_percent) {
  const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int percent = static_cast<int>(f * 100.0);
  if (percent == last_percent && done != 0 && done < total) return;
  last_percent = percent;
  const int filled = static_cast<int>(f * kBarWidth);
  char bar[kBarWidth + 1];
  for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : ' ';
  bar[kBarWidth] = '\0';
  std::fprintf(stderr, "\rloading [%s] %3d%% %.1f/%.1f MiB", bar, percent,
               static_cast<double>(done) / kMiB, static_cast<double>(total) / kMiB);
  if (done >= total) std::fprintf(stderr, "\r\033[K");  // the finished bar gives its line back
  std::fflush(stderr);
}

}  // namespace

std::shared_ptr<const model::Model> load_model_with_bar(const std::string& path) {
  if (::isatty(STDERR_FILENO) == 0) return model::Model::load(path);
  int last_percent = -1;
  return model::load_with_progress(path, [&](uint64_t done, uint64_t total) { draw(done, total, last_percent); });
}

}  // namespace ferrite::tools
