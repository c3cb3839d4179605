// A fixed pool of worker threads for data-parallel kernels, tuned for few
// cores: the caller is thread 0 and works too (no oversubscription), workers
// spin briefly between tasks (an inference step runs hundreds of short
// kernels back to back) and then sleep on a futex so an idle pool burns no core.
//
//   ThreadPool pool(2);
//   pool.run([&](int ith, int nth) { /* rows [ith*n/nth, (ith+1)*n/nth) */ });
//
// Tasks must not throw. run() is not reentrant and is called from one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace ferrite::cpu {

// The half-open range [begin, end) of `n` items that thread `ith` of `nth`
// handles, in contiguous near-equal parts.
struct Range {
  int64_t begin;
  int64_t end;
};
inline Range split_range(int64_t n, int ith, int nth) {
  const int64_t per = n / nth;
  const int64_t extra = n % nth;
  const int64_t begin = ith * per + (ith < extra ? ith : extra);
  return {begin, begin + per + (ith < extra ? 1 : 0)};
}

class ThreadPool {
 public:
  // `n_threads` in total, including the calling thread; at least 1.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(ith, nth) once on each of the nth = size() threads and returns
  // when every call has finished.
  template <typename F>
  void run(F&& fn) {
    auto* ptr = &fn;
    run_erased([](void* ctx, int ith, int nth) { (*static_cast<decltype(ptr)>(ctx))(ith, nth); }, ptr);
  }

  // As run(), but work of fewer than kMinParallelWork units (multiply-adds,
  // roughly) runs as fn(0, 1) on the calling thread: waking workers costs
  // more than tiny kernels.
  template <typename F>
  void run(F&& fn, int64_t work) {
    if (work < kMinParallelWork || n_threads_ == 1) {
      fn(0, 1);
    } else {
      run(fn);
    }
  }

  // Calls fn(begin, end) on each thread's split_range of [0, n) (empty ones
  // skipped): rows of a cheap row-wise op. `work` as in run().
  template <typename F>
  void run_split(int64_t n, F&& fn, int64_t work) {
    run([&](int ith, int nth) {
      const Range r = split_range(n, ith, nth);
      if (r.begin < r.end) fn(r.begin, r.end);
    }, work);
  }

  // Calls fn(ith, begin, end) on disjoint ranges that cover [0, n), the
  // threads taking them in turn from a shared counter: a thread held up
  // (another process on its core, a slower core) leaves the rest to the
  // others, where a fixed split makes every thread wait for it. Each range is
  // a quarter of what is left divided by the threads (guided scheduling),
  // never fewer than `min_size` items (but the last): long ranges first keep
  // each thread's reads contiguous, short ones at the end let the threads
  // finish together. Which thread runs a range, and where ranges begin, vary
  // from call to call: results must not depend on them. `work` as in run().
  template <typename F>
  void run_ranges(int64_t n, int64_t min_size, F&& fn, int64_t work) {
    std::atomic<int64_t> next{0};
    run([&](int ith, int nth) {
      const int64_t parts = int64_t{4} * nth;
      int64_t begin = next.load(std::memory_order_relaxed);
      while (begin < n) {
        const int64_t end = std::min(n, begin + std::max(min_size, (n - begin) / parts));
        if (next.compare_exchange_weak(begin, end, std::memory_order_relaxed)) {
          fn(ith, begin, end);
          begin = next.load(std::memory_order_relaxed);
        }
      }
    }, work);
  }

  // ~20 µs of single-core work.
  static constexpr int64_t kMinParallelWork = int64_t{1} << 16;

  // Number of threads a default pool uses: the logical CPUs available.
  static int default_threads();

 private:
  using TaskFn = void (*)(void* ctx, int ith, int nth);
  void run_erased(TaskFn fn, void* ctx);
  void worker_loop(int ith);

  int n_threads_;
  std::vector<std::thread> workers_;
  TaskFn task_ = nullptr;
  void* task_ctx_ = nullptr;
  std::atomic<uint32_t> generation_{0};  // bumped for each task (and for stop)
  std::atomic<int> pending_{0};          // workers still running the task
  bool stop_ = false;
};

}  // namespace ferrite::cpu
