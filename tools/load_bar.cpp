#include "load_bar.h"

#include <unistd.h>

#include <cstdio>

#include "model/load_progress.h"

namespace ferrite::tools {
namespace {

constexpr int kBarWidth = 30;
constexpr double kMiB = 1024.0 * 1024.0;

void draw(uint64_t done, uint64_t total) {
  const double f = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
  const int filled = static_cast<int>(f * kBarWidth);
  char bar[kBarWidth + 1];
  for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : ' ';
  bar[kBarWidth] = '\0';
  std::fprintf(stderr, "\rloading [%s] %3d%% %.0f/%.0f MiB", bar, static_cast<int>(f * 100.0),
               static_cast<double>(done) / kMiB, static_cast<double>(total) / kMiB);
  if (done >= total) std::fprintf(stderr, "\r\033[K");  // the finished bar gives its line back
  std::fflush(stderr);
}

}  // namespace

std::shared_ptr<const model::Model> load_model_with_bar(const std::string& path) {
  if (::isatty(STDERR_FILENO) == 0) return model::Model::load(path);
  return model::load_with_progress(path, draw);
}

}  // namespace ferrite::tools
