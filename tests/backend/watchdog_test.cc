// The real backends' iteration watchdog (backend/watchdog.h): it fires once, at the deadline or on
// a polled error, with a message naming what stalled, and never after it was stopped.
#include "backend/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace megasim::backend {
namespace {

using std::chrono::milliseconds;

TEST(Watchdog, FiresAtTheDeadlineNamingWhatStalled) {
  std::atomic<int> fires{0};
  std::string fired_with;
  const auto start = std::chrono::steady_clock::now();
  Watchdog dog(
      milliseconds(50), milliseconds(5), [] { return std::string(); }, [] { return std::string("task 7 (forward)"); },
      [&](const std::string& message) {
        fired_with = message;
        ++fires;
      });
  while (fires.load() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  dog.stop();
  EXPECT_EQ(fires.load(), 1);
  EXPECT_TRUE(dog.fired());
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(50));
  EXPECT_EQ(dog.message(), fired_with);
  EXPECT_NE(fired_with.find("no progress for 0.05 s"), std::string::npos) << fired_with;
  EXPECT_NE(fired_with.find("still running: task 7 (forward)"), std::string::npos) << fired_with;
}

TEST(Watchdog, FiresOnAPolledErrorBeforeTheDeadline) {
  std::atomic<int> polls{0};
  std::atomic<int> fires{0};
  Watchdog dog(
      std::chrono::hours(1), milliseconds(2), [&] { return ++polls >= 3 ? std::string("peer rank 2 died") : ""; },
      [] { return std::string("unused"); }, [&](const std::string&) { ++fires; });
  const auto start = std::chrono::steady_clock::now();
  while (!dog.fired() && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  dog.stop();
  EXPECT_EQ(fires.load(), 1);
  EXPECT_EQ(dog.message(), "peer rank 2 died");
  EXPECT_EQ(polls.load(), 3);  // it stops polling once fired
}

TEST(Watchdog, StoppedInTimeItNeverFires) {
  std::atomic<int> fires{0};
  {
    Watchdog dog(
        std::chrono::hours(1), milliseconds(1), [] { return std::string(); }, [] { return std::string(); },
        [&](const std::string&) { ++fires; });
    std::this_thread::sleep_for(milliseconds(10));
    dog.stop();
    dog.stop();  // idempotent
    EXPECT_FALSE(dog.fired());
    EXPECT_EQ(dog.message(), "");
  }
  EXPECT_EQ(fires.load(), 0);
}

}  // namespace
}  // namespace megasim::backend
