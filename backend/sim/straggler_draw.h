// The draw of a scenario's stragglers (models/stragglers.h) for one iteration simulation, an input
// of the simulator's executor (iteration_executor.h): which GPUs are slow and by how much, each
// task's compute multiple on each (stage, replica) unit, and each rank's pause phase, from the
// named random streams "stragglers.hosts", "stragglers.drift", "stragglers.jitter",
// "stragglers.seq_length" and "stragglers.gc" of the scenario's seed.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "models/stragglers.h"
#include "models/workload.h"
#include "sim/rng.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace megasim::backend {

struct StragglerDraw {
  std::vector<double> host_slowdown;               // per server, >= 1
  std::vector<double> gpu_slowdown;                // per GPU: its server's factor times its own, >= 1
  std::vector<double> gpu_slowdown_after_restart;  // the same at uptime 0 (drift reset); empty: no drift
  std::vector<std::vector<float>> task_scale;      // per unit (replica + dp * stage), per task; empty: none
  sim::SimTime gc_period = 0;
  sim::SimTime gc_pause = 0;
  std::vector<sim::SimTime> gc_phase;  // per unit (synchronized) or per rank (IterationInputs::gc_phase)
  std::vector<std::pair<topo::LinkId, double>> degraded_links;  // speed factors in (0, 1]
};

// Throws sim::ConfigError("stragglers.slow_hosts" / "stragglers.slow_gpus" / "stragglers.slow_nics" /
// "stragglers.slow_links") for an id outside the cluster, and as models::validate(params) does.
StragglerDraw draw_stragglers(const models::StragglerParams& params, const models::Workload& workload,
                              const topo::Topology& topology, std::uint64_t seed);

// Per server, the drift rate (models/stragglers.h: the growth of its compute multiplier per hour of
// uptime; 0 for servers that do not drift), from the stream "stragglers.drift" of `rng`.
std::vector<double> drift_rates_per_hour(const models::StragglerParams& params, std::int64_t servers,
                                         const sim::RngStreams& rng);

// Puts the draw into the simulator's inputs (gpu_slowdown, task_scale, pauses, degraded links).
void apply(const StragglerDraw& draw, IterationInputs& inputs);

// The GPU slowdowns with the servers of `replaced` at factor 1 (a what-if: those hosts swapped for
// healthy spares); other GPUs keep their factors.
std::vector<double> without_hosts(const StragglerDraw& draw, const topo::Topology& topology,
                                  const std::vector<std::int64_t>& replaced);

// Per task of each unit's stage, the attention core's share of the task's compute FLOPs (what grows
// with the square of the sequence length), index = stage.
std::vector<std::vector<double>> attention_shares(const models::Workload& workload);

}  // namespace megasim::backend
