#include "sampling/token_window.h"

namespace ferrite::sampling {

bool TokenWindow::push(int32_t token, int32_t* evicted) {
  if (capacity_ == 0) return false;
  if (data_.size() < capacity_) {
    data_.push_back(token);
    return false;
  }
  if (evicted) *evicted = data_[head_];
  data_[head_] = token;
  head_ = (head_ + 1) % capacity_;
  return true;
}

}  // namespace ferrite::sampling
