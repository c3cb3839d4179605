#include "text_scoring.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ferrite::tools {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IoError(path, "read failed");
  return ss.str();
}

double negative_log_prob(std::span<const float> logits, int32_t target) {
  float max = logits[0];
  for (float v : logits) max = std::max(max, v);
  double sum = 0.0;
  for (float v : logits) sum += std::exp(v - max);
  return -(static_cast<double>(logits[static_cast<size_t>(target)] - max) - std::log(sum));
}

}  // namespace ferrite::tools
