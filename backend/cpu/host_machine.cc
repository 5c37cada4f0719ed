#include "backend/cpu/host_machine.h"

#include <unistd.h>

#include <fstream>

namespace megasim::backend::cpu {

double host_memory_gbytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e9;
}

std::string cpu_device_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string model = "unknown processor";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  return "cpu: " + model + " (Eigen float32, one core per rank)";
}

}  // namespace megasim::backend::cpu
