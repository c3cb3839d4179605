// A fixed set of threads running jobs from a bounded queue: the handlers
// that may block (generation waits for the engine, streams wait for the
// client) run here, never on the I/O thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ferrite::server::http {

class WorkerPool {
 public:
  WorkerPool(int threads, size_t max_queued);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues a job; false when every thread is busy and the queue is full, or
  // after stop().
  bool submit(std::function<void()> job);
  // Runs what is queued, then joins the threads (idempotent).
  void stop();

  int threads() const { return static_cast<int>(threads_.size()); }
  // Jobs running or queued.
  size_t load() const;

 private:
  void loop();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t max_queued_;
  size_t busy_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ferrite::server::http
