#include "backend/watchdog.h"

#include <fmt/format.h>

#include <utility>

#include "sim/error.h"

namespace megasim::backend {

Watchdog::Watchdog(std::chrono::milliseconds timeout, std::chrono::milliseconds poll_interval, Poll poll,
                   Describe describe_stall, Fire fire)
    : poll_(std::move(poll)), describe_(std::move(describe_stall)), fire_(std::move(fire)) {
  MEGASIM_ASSERT(timeout.count() > 0 && poll_interval.count() > 0, "a watchdog needs a positive timeout and interval");
  thread_ = std::thread([this, timeout, poll_interval] { watch(timeout, poll_interval); });
}

Watchdog::~Watchdog() {
  stop();
}

void Watchdog::stop() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_requested_ = true;
  }
  stopped_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Watchdog::fired() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return fired_;
}

std::string Watchdog::message() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

void Watchdog::watch(std::chrono::milliseconds timeout, std::chrono::milliseconds poll_interval) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_requested_) {
    const Clock::time_point wake = std::min(deadline, Clock::now() + poll_interval);
    if (stopped_cv_.wait_until(lock, wake, [this] { return stop_requested_; })) return;
    lock.unlock();
    std::string message = poll_();
    if (message.empty() && Clock::now() >= deadline) {
      message = fmt::format("no progress for {:.3g} s", std::chrono::duration<double>(timeout).count());
      const std::string stalled = describe_();
      if (!stalled.empty()) message += "; still running: " + stalled;
    }
    if (!message.empty()) {
      fire_(message);
      lock.lock();
      fired_ = true;
      message_ = std::move(message);
      return;
    }
    lock.lock();
  }
}

}  // namespace megasim::backend
