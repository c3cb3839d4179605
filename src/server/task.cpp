#include "server/task.h"

namespace ferrite::server {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
    case FinishReason::None: break;
  }
  return "";
}

void Task::push(Event ev) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    if (ev.final) {
      closed_ = true;
      error_kind_ = ev.error_kind;
    }
    events_.push_back(std::move(ev));
  }
  cv_.notify_all();
}

bool Task::next(Event& out) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !events_.empty() || delivered_ || cancelled(); });
  if (events_.empty()) return false;
  if (cancelled() && !events_.front().final) {
    // The consumer gave up: drop intermediate events.
    events_.clear();
    return false;
  }
  out = std::move(events_.front());
  events_.pop_front();
  if (out.final) delivered_ = true;
  return true;
}

void Task::cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
}

ErrorKind Task::error_kind() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_kind_;
}

bool Task::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace ferrite::server
