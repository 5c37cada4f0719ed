// The one way the studies run simulations side by side (sweeps, campaigns' fabric states, the
// measured-calibration fit's rows): plain threads over a shared work source, the caller's thread
// among them, so one thread means no thread started at all.
#pragma once

#include <cstddef>
#include <functional>

namespace megasim::scenarios {

// Runs `work` on `threads` threads (the caller's included; 0 counts as 1), each calling it until it
// returns false. `work` must not throw: it catches and records its own errors.
void run_on_threads(unsigned threads, const std::function<bool()>& work);

// task(i) for every i in [0, count) on min(threads, count) threads, the indices handed out in
// order. A task's exception is kept and the other tasks run on, or with stop_on_error no task
// starts after it; once every thread has stopped, the exception of the lowest index is rethrown.
void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& task,
                    bool stop_on_error = false);

}  // namespace megasim::scenarios
