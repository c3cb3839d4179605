// Cuts generated text at the first stop string. Text that could be the start
// of a stop string is held back until the next piece settles it, so a stop
// string split across tokens never leaks into the output.
#pragma once

#include <string>
#include <vector>

namespace ferrite::runtime {

class StopStrings {
 public:
  explicit StopStrings(std::vector<std::string> stops = {});

  // Adds `text`; returns what may be emitted now. Sets stopped() (and
  // matched()) when a stop string appeared; nothing after it is emitted.
  std::string push(const std::string& text);
  // The held-back tail (at the end of generation).
  std::string flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace ferrite::runtime
