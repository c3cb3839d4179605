// A one-line progress bar on stderr for `ferrite quantize` / `ferrite synth`
// (redrawn in place on a terminal, one line per 10% otherwise).
#pragma once

#include <cstdint>
#include <string>

namespace ferrite::tools {

class Progress {
 public:
  explicit Progress(uint64_t total);
  // `done` of `total` units finished; `what` and `detail` name the current item.
  void update(uint64_t done, const std::string& what, const std::string& detail);
  void finish();

 private:
  uint64_t total_;
  bool tty_;
  int last_decile_ = -1;
};

}  // namespace ferrite::tools
