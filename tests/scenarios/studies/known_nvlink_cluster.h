// The cluster section of study tests whose expected times are derived by hand: A100 servers of 8
// GPUs with NVLink at 300 GB/s each way and efficiency 0.8 (240 GB/s achieved per port), 10 us per
// collective call and 1 us per NVLink step.
#pragma once

#include <cstdint>
#include <string>

namespace megasim::scenarios::testing {

inline std::string known_nvlink_cluster(std::int64_t gpus) {
  return "[cluster]\ngpu = \"A100\"\ngpus = " + std::to_string(gpus) +
         "\nnvlink_gbytes_per_s = 300\n[fabric]\nnvlink_efficiency = 0.8\n[collective]\nbase_latency_us = 10\n"
         "nvlink_step_latency_us = 1\n";
}

}  // namespace megasim::scenarios::testing
