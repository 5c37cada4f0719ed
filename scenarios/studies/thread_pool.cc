#include "scenarios/studies/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <vector>

namespace megasim::scenarios {

void run_on_threads(unsigned threads, const std::function<bool()>& work) {
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t) {
    helpers.emplace_back([&work] {
      while (work()) {
      }
    });
  }
  while (work()) {
  }
  for (std::thread& t : helpers) t.join();
}

void for_each_index(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& task,
                    bool stop_on_error) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  run_on_threads(static_cast<unsigned>(std::min<std::size_t>(threads, count)), [&] {
    if (stop_on_error && failed) return false;
    const std::size_t i = next++;
    if (i >= count) return false;
    try {
      task(i);
    } catch (...) {
      errors[i] = std::current_exception();
      failed = true;
    }
    return true;
  });
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace megasim::scenarios
