// A one-line progress bar on stderr, drawn only when stderr is a terminal (so logs and pipes get
// nothing). Not thread-safe: callers serialise update() (run_sweep_study's progress callback is).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace megasim::cli {

class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();  // clears the line if anything was drawn
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // `what` names the items counted ("plans screened"); a new `what` starts a new phase, whose time
  // (and estimate of the time left) counts from then.
  void update(std::string_view what, std::size_t done, std::size_t total);

 private:
  std::string what_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace megasim::cli
