#include "sim/time.h"

#include <cstdio>

namespace megasim::sim {

SimTimeError::SimTimeError(const std::string& message) : ConfigError(message) {}

void throw_time_error(std::string_view what, double seconds) {
  char value[64];
  std::snprintf(value, sizeof value, "%.6g s", seconds);
  if (seconds > kMaxSimSeconds) {
    throw SimTimeError("simulated time overflows: " + std::string(what) + " is " + value +
                       ", beyond the simulator's limit of 2^62 ns (about 146 years)");
  }
  throw SimTimeError("simulated time is not a valid duration: " + std::string(what) + " is " + value +
                     " (expected a number of seconds from 0 to 2^62 ns, about 146 years)");
}

}  // namespace megasim::sim
