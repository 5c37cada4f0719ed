// This machine as the cpu backend sees it: its memory and its processor's name.
#pragma once

#include <string>

namespace megasim::backend::cpu {

// This machine's physical memory, GB (1e9 bytes).
double host_memory_gbytes();

// "cpu: <processor model> (Eigen float32, one core per rank)", the model from /proc/cpuinfo.
std::string cpu_device_name();

}  // namespace megasim::backend::cpu
