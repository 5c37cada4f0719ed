// The studies' threads (scenarios/studies/thread_pool.h): every task once, the lowest failing
// index's error, no new task after an error when asked.
#include "scenarios/studies/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace megasim::scenarios {
namespace {

TEST(ThreadPool, RunsEveryIndexOnceOnAnyNumberOfThreads) {
  for (const unsigned threads : {0u, 1u, 2u, 7u, 64u}) {
    std::vector<std::atomic<int>> runs(50);
    for_each_index(runs.size(), threads, [&](std::size_t i) { ++runs[i]; });
    for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << i << " on " << threads;
  }
  bool ran = false;
  for_each_index(0, 4, [&](std::size_t) { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(ThreadPool, RethrowsTheLowestFailingIndexAfterTheOthersRan) {
  std::atomic<int> ran{0};
  try {
    for_each_index(20, 3, [&](std::size_t i) {
      ++ran;
      if (i == 5 || i == 12) throw std::runtime_error("task " + std::to_string(i));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 5");
  }
  EXPECT_EQ(ran.load(), 20);  // the others run on
}

TEST(ThreadPool, StopOnErrorStartsNoTaskAfterTheFailure) {
  // One thread hands out the indices in order: the failure at 3 is the last task that runs.
  std::vector<std::size_t> ran;
  EXPECT_THROW(for_each_index(
                   10, 1,
                   [&](std::size_t i) {
                     ran.push_back(i);
                     if (i == 3) throw std::invalid_argument("3");
                   },
                   true),
               std::invalid_argument);
  EXPECT_EQ(ran, (std::vector<std::size_t>{0, 1, 2, 3}));
}

TEST(ThreadPool, RunOnThreadsCallsUntilTheWorkIsDone) {
  std::atomic<int> left{100};
  std::atomic<int> done{0};
  run_on_threads(4, [&] {
    if (left-- <= 0) return false;
    ++done;
    return true;
  });
  EXPECT_EQ(done.load(), 100);
}

}  // namespace
}  // namespace megasim::scenarios
