// `megasim collective`: one collective over one group, or every group of a kind of a Megatron plan
// at once (all crossing the fabric together), reported like nccl-tests (size, time, algbw, busbw).
#pragma once

#include <cstdint>
#include <string>

#include "models/collective.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

enum class GroupScope : std::uint8_t { kSingle, kTensor, kData, kPipeline };
// "tp", "dp", "pp"; throws sim::ConfigError naming `key` otherwise.
GroupScope parse_group_scope(std::string_view text, std::string_view key);
std::string_view to_string(GroupScope scope);

struct CollectiveRequest {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  models::CollectiveAlgorithm algorithm = models::CollectiveAlgorithm::kRing;
  double bytes = 1024.0 * 1024 * 1024;
  // kSingle: one group of the first `group_gpus` GPUs (0: every GPU of the cluster).
  // Otherwise: every group of that kind of the plan (scenario.plan) over all the cluster's GPUs.
  GroupScope scope = GroupScope::kSingle;
  std::int64_t group_gpus = 0;
};

struct CollectiveTiming {
  double time_s = 0;
  double algbw_gbytes_per_s = 0;
  double busbw_gbytes_per_s = 0;
};

struct CollectiveReport {
  std::string op, algo, routing, scope;
  double bytes = 0;
  std::int64_t cluster_gpus = 0;
  std::int64_t group_size = 0;
  std::int64_t groups = 0;
  std::int64_t slowest_group = 0;  // index in Megatron's group order
  CollectiveTiming slowest;        // the reported figure: the slowest group sets the pace
  CollectiveTiming fastest;
  double mean_time_s = 0;
  std::uint64_t flows = 0;  // fabric flows simulated
  std::uint64_t rate_recomputations = 0;
  double wall_time_s = 0;  // host time spent simulating (not deterministic)
};

CollectiveReport run_collective_study(const Scenario& scenario, const CollectiveRequest& request);

// The nccl-tests-like table; with JSON the keys op, bytes, gpus, algo, routing, time_s,
// algbw_gbytes_per_s, busbw_gbytes_per_s come first, then the group details.
std::string to_text(const CollectiveReport& report);
std::string to_json(const CollectiveReport& report, bool include_wall_time);

}  // namespace megasim::scenarios
