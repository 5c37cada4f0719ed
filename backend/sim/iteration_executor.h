// The simulated backend's iteration executor: plays a models::Workload on the modelled cluster and
// returns the backend::Trace of one training iteration (DESIGN.md "One data flow").
//
// Execution model (the stream and dependency semantics are models/workload.h's):
//  - One execution unit per (pipeline stage, data-parallel replica): its tensor-parallel group. The
//    TP ranks of a unit run identical tasks at identical times on their own GPUs, so they share one
//    timeline (TraceUnit). Unit u = replica + dp * stage holds ranks [u*tp, (u+1)*tp) (Megatron's
//    tp-dp-pp order, models/parallel_groups.h), on the GPUs the placement gives them.
//  - Compute tasks take sum over runs of repeat x (kernel-list compute time x the unit's slowdown x
//    the task's scale + the exposed TP collective time), plus the unit's pauses they run over. The slowdown is the
//    largest gpu_slowdown over the unit's GPUs (a TP group runs in lock step, so its slowest GPU sets the pace). TP
//    collectives are timed by tp_collective_time.h: the exact NVLink fast path for a group inside one server, else the
//    collective alone on the fabric. Calls the workload marks overlappable hide behind the
//    list's GEMMs: exposed = max(0, overlappable TP time - GEMM time x slowdown). At tp = 1 there is
//    no TP collective (Megatron skips the call for a group of one).
//  - Pipeline transfers: a send and the recv with the same tag on the peer stage (same replica) form
//    one fabric flow whose lanes join the GPUs of equal TP rank; bytes_per_lane = task bytes; the
//    flow pays its path latency. No launch latency is added (the NCCL p2p start-up is not modelled).
//  - Data-parallel collectives: the k-th kDpCollective task of a stage is one NCCL call over each of
//    the stage's tp DP groups. It begins when every replica has issued it (reached it on its dp
//    stream with its dependencies met) and runs tp ring collectives on the fabric through the
//    CollectiveRunner, one communicator per DP group (stable QPs); the task ends in every replica
//    when all tp have finished. A group of one member pays only the base latency.
// Determinism: events at one instant are processed in a fixed order (unit, then program order).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "backend/sim/fabric.h"
#include "backend/trace.h"
#include "models/collective.h"
#include "models/compute_cost.h"
#include "models/gpu_spec.h"
#include "models/workload.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace megasim::backend {

// Seconds of one run of a kernel list on an unslowed GPU: all of it, its GEMMs alone (what
// tensor-parallel communication can hide behind) and the attention ring attention's transfers run
// beside (models::kernel_list_ring_attention_window_s; 0 when the list has none).
struct KernelTime {
  double compute_s = 0;
  double gemm_s = 0;
  double ring_attention_s = 0;
};

struct IterationInputs {
  const models::Workload* workload = nullptr;  // resolved plan inside; must outlive the call
  const topo::Topology* topology = nullptr;    // must outlive the call
  topo::Placement placement;                   // rank -> GPU, plan.world_size entries, distinct GPUs
  FabricParams fabric;
  models::CollectiveParams collective;
  models::GpuSpec gpu;
  models::ComputeCalibration calibration;
  // Per GPU (indexed by GpuId, topology->num_gpus() entries) multiplier >= 1 on compute time;
  // empty: no slowdown.
  std::vector<double> gpu_slowdown;
  // Per execution unit (u = replica + dp * stage), a multiplier > 0 on the compute time of each task
  // of its stage program (jitter, sequence-length imbalance: models/stragglers.h), applied with the
  // slowdown (the exposed TP time is not scaled). Empty, or an empty entry for a unit: 1.
  std::vector<std::vector<float>> task_scale;
  // Pauses (garbage collection): each TP rank r of unit u stops for gc_pause at
  // gc_phase[u * m + r] + k * gc_period (every integer k: a pause in progress at time 0 counts), with
  // m = gc_phase.size() / units either 1 (the unit's ranks pause together) or the TP size (each rank
  // on its own phase). The unit's compute waits while any of its ranks is paused
  // (backend/sim/pause_schedule.h): a compute task running at a pause's start takes that pause
  // longer; one starting inside a pause waits for its rest. gc_period 0: no pauses (gc_phase may
  // then be empty).
  sim::SimTime gc_period = 0;
  sim::SimTime gc_pause = 0;
  std::vector<sim::SimTime> gc_phase;
  // Per kernel list of the workload, replacing models::kernel_list_compute_time_s and
  // kernel_list_gemm_time_s (calibrated or measured times; tests). Empty: the cost model's.
  std::vector<KernelTime> kernel_times;
  bool record_flows = false;  // fill Trace::flows
  // Network links that failed before the iteration and are routed around: down and out of their
  // ECMP groups from t = 0 (Fabric::set_link_failed). A cable's two directions are two entries.
  std::vector<topo::LinkId> failed_links;
  // Degraded links (a slow NIC, a cable with errors): each link's bandwidth times its factor in
  // (0, 1] for the whole iteration (Fabric::set_link_speed_factor). A cable's two directions are two
  // entries.
  std::vector<std::pair<topo::LinkId, double>> degraded_links;
  // Simulate data-parallel replica 0 alone, standing for every replica: the Trace then has one unit
  // per stage (replica 0's) instead of one per (stage, replica). Only for inputs whose replicas are
  // identical but for the fabric their pipeline transfers share (replicas_identical, asserted): the
  // other replicas' pipeline flows are left off the fabric, so their ECMP collisions with replica 0's
  // are not modelled, while the DP collectives still run over every replica's GPUs. The sweep's
  // screen (scenarios/studies/sweep/sweep_study.h).
  bool one_replica = false;
};

// Whether the replicas of the inputs' plan run identical programs at identical speeds, so that
// only their pipeline transfers' share of the fabric tells them apart: replicas_alike_but_for_speed,
// and each stage's units as slow in every replica (a unit runs at its slowest GPU's slowdown).
// (backend/sim/replica_speeds.cc)
bool replicas_identical(const IterationInputs& inputs);
// The same but for the units' slowdowns: no task scales, no pauses, no failed or degraded links,
// and every TP group inside one server (a TP group across servers has its own ECMP paths, and so
// its own TP collective times).
bool replicas_alike_but_for_speed(const IterationInputs& inputs);
// Per GPU, the slowdowns that give every replica the units' slowdowns of the slowest replica (the
// largest unit slowdown of its stages, then the largest sum over its stages, then the lowest
// index): each GPU of stage s's units gets that replica's stage-s unit slowdown; GPUs outside the
// placement keep theirs. Every replica then runs that replica's pipeline in step, which no replica
// of the inputs' own iteration outruns: it waits, through the DP collectives, for the slowest, so
// the iteration with these slowdowns is at most as long as with the inputs' own, up to the
// fabric's second-order effects (the sweep's screen under slow hosts, scenarios/studies/run_study.h).
// Empty when the inputs have no slowdowns.
std::vector<double> slowest_replica_slowdowns(const IterationInputs& inputs);

// Counters of one run, for benchmarks and scaling studies.
struct IterationStats {
  std::uint64_t events = 0;                 // simulator events processed
  std::uint64_t rate_recomputations = 0;    // max-min solves of the fabric
  std::uint64_t region_recomputations = 0;  // of which solved the changed region only
  std::uint64_t region_rounds = 0;          // rounds of the region solves (Fabric::region_rounds)
  std::uint64_t flows = 0;                  // fabric flows (PP transfers and collective channels)
  std::uint64_t dp_collectives = 0;         // DP collectives run (one per DP group per call)
};

// Thrown by simulate_iteration when the simulation ran out of events with flows still stalled: a
// failed link on every path between two GPUs that must exchange data (failed_links that partition
// the fabric) leaves them at rate 0 for good, so the iteration can never finish. Not an internal
// error but an outcome a caller models: a campaign fails the job, as NCCL's timeout would.
class UnroutableIteration : public std::runtime_error {
 public:
  UnroutableIteration(std::uint64_t stalled_flows, topo::GpuId src, topo::GpuId dst);
  [[nodiscard]] std::uint64_t stalled_flows() const { return stalled_flows_; }

 private:
  std::uint64_t stalled_flows_;
};

// Simulates one iteration from t = 0. Throws sim::ConfigError("stragglers.gpu_slowdown") when the
// slowdown vector has the wrong size or a factor that is not a finite number >= 1,
// ("stragglers.task_scale") for a scale vector of the wrong size or a factor that is not finite and
// > 0, ("stragglers.gc_period_s") for pauses with a phase vector of the wrong size or a phase
// outside [0, period) or a pause not shorter than the period, ("stragglers.slow_links") for a
// degraded link that is not a link of the cluster or a factor outside (0, 1], and
// ("iteration.kernel_times") when kernel_times has neither 0 nor one entry per kernel list or a time
// < 0. Throws UnroutableIteration when failed links leave flows without a path. Inconsistent
// workloads (a send without its recv, a cycle) are internal errors.
Trace simulate_iteration(const IterationInputs& inputs, IterationStats* stats = nullptr);

}  // namespace megasim::backend
