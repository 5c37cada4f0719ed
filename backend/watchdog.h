// A watchdog for a real backend's iteration: a thread that, while the iteration is in flight, polls
// for an asynchronous error and fires once, with a message, when the poll reports one or when the
// deadline passes, so that a stalled collective ends the job with a message naming what stalled
// instead of hanging it (the cuda backend aborts its NCCL communicators on fire: ncclCommAbort is
// meant to be called from another thread while operations hang).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace megasim::backend {

class Watchdog {
 public:
  // Returns a non-empty message when something has already failed (polled every `poll_interval`).
  using Poll = std::function<std::string()>;
  // Called at most once, on the watchdog's thread, with the poll's message or, at the deadline,
  // "no progress for T s" and `describe_stall()`'s description of what was still running.
  using Fire = std::function<void(const std::string& message)>;
  using Describe = std::function<std::string()>;

  // Starts the thread. Precondition: timeout > 0, poll_interval > 0.
  Watchdog(std::chrono::milliseconds timeout, std::chrono::milliseconds poll_interval, Poll poll,
           Describe describe_stall, Fire fire);
  // Stops the thread (stop()).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Ends the watch (the iteration finished or failed on its own) and joins the thread; idempotent.
  void stop();
  // Whether it fired, and with what message (valid after stop()).
  [[nodiscard]] bool fired() const;
  [[nodiscard]] std::string message() const;

 private:
  void watch(std::chrono::milliseconds timeout, std::chrono::milliseconds poll_interval);

  Poll poll_;
  Describe describe_;
  Fire fire_;
  mutable std::mutex mutex_;
  std::condition_variable stopped_cv_;
  bool stop_requested_ = false;
  bool fired_ = false;
  std::string message_;
  std::thread thread_;
};

}  // namespace megasim::backend
