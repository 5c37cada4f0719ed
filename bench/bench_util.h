// Helpers shared by the benchmark programs.
#pragma once

#include <fstream>
#include <string>

namespace megasim::bench {

// Peak resident set size of this process in MB (VmHWM from /proc/self/status; 0 if unavailable).
inline double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "VmHWM:") {
      double kb = 0;
      status >> kb;
      return kb / 1024.0;
    }
  }
  return 0;
}

}  // namespace megasim::bench
