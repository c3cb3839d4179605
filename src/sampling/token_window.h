// The last `capacity` tokens accepted, oldest dropped first. Storage grows
// with the tokens actually pushed, so a huge window costs nothing up front.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ferrite::sampling {

class TokenWindow {
 public:
  explicit TokenWindow(size_t capacity) : capacity_(capacity) {}

  // Returns true and sets *evicted when the push dropped the oldest token.
  bool push(int32_t token, int32_t* evicted = nullptr);

  size_t size() const { return data_.size(); }
  size_t capacity() const { return capacity_; }
  // i = 0: the most recent token. Requires i < size().
  int32_t from_end(size_t i) const {
    const size_t n = data_.size();
    return data_[(head_ + n - 1 - i) % n];
  }
  void clear() {
    data_.clear();
    head_ = 0;
  }

 private:
  size_t capacity_;
  std::vector<int32_t> data_;
  size_t head_ = 0;  // index of the oldest token once data_ is full
};

}  // namespace ferrite::sampling
