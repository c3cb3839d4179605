#include "server/http/worker_pool.h"

#include <algorithm>

namespace ferrite::server::http {

WorkerPool::WorkerPool(int threads, size_t max_queued) : max_queued_(max_queued) {
  const int n = std::max(1, threads);
  threads_.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { loop(); });
}

WorkerPool::~WorkerPool() { stop(); }

bool WorkerPool::submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    const size_t idle = threads_.size() - std::min(threads_.size(), busy_);
    if (queue_.size() >= idle + max_queued_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

size_t WorkerPool::load() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_ + queue_.size();
}

void WorkerPool::loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      job = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
    }
    job();
    std::lock_guard<std::mutex> lock(mu_);
    --busy_;
  }
}

void WorkerPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id()) t.join();
  }
}

}  // namespace ferrite::server::http
