#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"
#include "cpu/thread_pool.h"

namespace ferrite::cpu {
namespace {

TEST(ThreadPool, EveryThreadRunsEachTaskOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    EXPECT_EQ(pool.size(), n);
    for (int round = 0; round < 200; ++round) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.run([&](int ith, int nth) {
        EXPECT_EQ(nth, n);
        hits[static_cast<size_t>(ith)].fetch_add(1);
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "threads " << n << " round " << round;
    }
  }
}

TEST(ThreadPool, SplitRangeCoversEverythingOnce) {
  for (int64_t n : {0, 1, 5, 64, 1001}) {
    for (int nth : {1, 2, 3, 7}) {
      int64_t expect_begin = 0;
      for (int ith = 0; ith < nth; ++ith) {
        const Range r = split_range(n, ith, nth);
        EXPECT_EQ(r.begin, expect_begin);
        EXPECT_LE(r.end - r.begin, n / nth + 1);
        expect_begin = r.end;
      }
      EXPECT_EQ(expect_begin, n);
    }
  }
}

TEST(ThreadPool, ParallelSumIsComplete) {
  ThreadPool pool(2);
  const int64_t n = 100000;
  std::vector<int64_t> partial(2, 0);
  pool.run([&](int ith, int nth) {
    const Range r = split_range(n, ith, nth);
    for (int64_t i = r.begin; i < r.end; ++i) partial[static_cast<size_t>(ith)] += i;
  });
  EXPECT_EQ(partial[0] + partial[1], n * (n - 1) / 2);
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), InvalidArgument); }

}  // namespace
}  // namespace ferrite::cpu
