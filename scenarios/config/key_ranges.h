// The physical bounds the key table (keys.cc, keys_reliability.cc, keys_stragglers.cc) gives its
// numeric keys, in one place. Each is far outside what any real cluster or job has, so no real plan
// meets one, yet close enough that no value inside can overflow the simulation by itself:
// simulated time ends at 2^62 ns, about 146 years (sim/time.h), and every duration bound here is a
// small fraction of that.
#pragma once

#include "scenarios/config/keys.h"

namespace megasim::scenarios::ranges {

constexpr KeyRange between(double min, double max) {
  return KeyRange{min, max, false};
}
// 0 is a sentinel ("from the device", "never", "off") besides the range.
constexpr KeyRange zero_or(double min, double max) {
  return KeyRange{min, max, true};
}

// Counts. 2^24 - 2: NIC addresses in 10.0.0.0/8 (topology/cluster_params.h), so no count of GPUs,
// hosts or ranks can be larger.
inline constexpr double kMaxGpus = 16'777'214;
inline constexpr double kMaxSeed = 9'223'372'036'854'775'807.0;  // INT64_MAX: TOML integers are 64-bit
// Samples per iteration: 2^24, more than a hundred times the largest published global batches
// (LAMB's 64k for BERT, 16M tokens of Llama 3 405B = 2,048 sequences).
inline constexpr double kMaxBatch = 16'777'216;

// Speeds. 10 Mb/s (the first Ethernet) to 100 Tb/s (60 times the fastest switch port of 2025).
inline constexpr double kMinGbps = 0.01;
inline constexpr double kMaxGbps = 1e5;
// GB/s of NVLink per GPU or of a host's reduction: 1 MB/s to 100 TB/s (NVLink 5 is 0.9 TB/s).
inline constexpr double kMinGbytesPerS = 1e-3;
inline constexpr double kMaxGbytesPerS = 1e5;
// Achievable fraction of a link's rate: below 1% a fabric is broken, not slow.
inline constexpr double kMinEfficiency = 0.01;

// Queue pairs per connection: NCCL's NCCL_IB_MAX_QPS, the most NCCL_IB_QPS_PER_CONNECTION may ask
// for (src/transport/net_ib).
inline constexpr double kMaxQpsPerConnection = 128;

// Latencies. A network hop of 100 ms is an intercontinental cable; an NVLink hop of 1 ms or a
// collective step of 1 s is a hung kernel, not a latency.
inline constexpr double kMaxLinkLatencyNs = 1e8;
inline constexpr double kMaxNvlinkLatencyNs = 1e6;
inline constexpr double kMaxCollectiveLatencyUs = 1e6;

// Durations of operations (detection, diagnosis, restarts, saves): up to a week; timeouts too.
inline constexpr double kWeekS = 7 * 86400.0;
inline constexpr double kHourS = 3600.0;
inline constexpr double kDayS = 86400.0;
// Repairs: up to a year. Uptime and the checkpoint interval: up to ten years (the longest campaign).
inline constexpr double kYearH = 8760.0;
inline constexpr double kTenYearsH = 87'600.0;
inline constexpr double kTenYearsS = 315'360'000.0;
// Mean time between failures of one instance: 3.6 s (0.001 h, a stress test) to 10^9 h (100,000
// years: never in practice; 0 says never exactly).
inline constexpr double kMinMtbfH = 1e-3;
inline constexpr double kMaxMtbfH = 1e9;
// What-if multiplier of every failure rate.
inline constexpr double kMaxRateScale = 1e6;
// Compute multipliers of a slow server or GPU: a 1000x slower part is a dead one.
inline constexpr double kMaxSlowdown = 1000;

}  // namespace megasim::scenarios::ranges
