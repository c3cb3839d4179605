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

// Ranges cover [0, n) once, none shorter than min_size but the one that ends
// at n, and (guided) the first is a share of the whole, not one item.
TEST(ThreadPool, RunRangesCoverEverythingOnce) {
  for (int n : {1, 2, 3, 5}) {
    ThreadPool pool(n);
    for (int64_t items : {0, 1, 2, 9, 128, 1000}) {
      for (int64_t min_size : {1, 3}) {
        for (int round = 0; round < 20; ++round) {
          std::vector<std::atomic<int>> hits(static_cast<size_t>(items));
          std::atomic<int64_t> longest{0};
          std::atomic<int> bad_ranges{0};
          pool.run_ranges(items, min_size, [&](int ith, int64_t begin, int64_t end) {
            if (ith < 0 || ith >= n || begin >= end || end > items || (end - begin < min_size && end != items)) {
              bad_ranges.fetch_add(1);
            }
            int64_t seen = longest.load();
            while (end - begin > seen && !longest.compare_exchange_weak(seen, end - begin)) {
            }
            for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
          }, ThreadPool::kMinParallelWork);
          ASSERT_EQ(bad_ranges.load(), 0) << n << " " << items << " " << min_size;
          for (int64_t i = 0; i < items; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << n << " " << i;
          const int64_t first_share = items / (4 * n);
          EXPECT_GE(longest.load(), std::max(first_share, std::min(items, min_size)));
        }
      }
    }
  }
}

TEST(ThreadPool, RejectsZeroThreads) { EXPECT_THROW(ThreadPool(0), InvalidArgument); }

}  // namespace
}  // namespace ferrite::cpu
