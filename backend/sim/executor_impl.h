// Private state of the iteration executor, shared by its implementation files:
//   iteration_executor.cc  input checks, setup of units, the run, the trace
//   executor_stages.cc     per-stage dependency lists, stream orders, send/recv matching
//   executor_costs.cc      kernel-list costs and compute task durations
//   executor_streams.cc    streams, dependencies, compute tasks
//   executor_p2p.cc        pipeline send/recv matching and transfers
//   executor_dp.cc         data-parallel collectives
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "backend/sim/collective_runner.h"
#include "backend/sim/fabric.h"
#include "backend/sim/iteration_executor.h"
#include "backend/sim/pause_schedule.h"
#include "backend/sim/tp_collective_time.h"
#include "sim/simulator.h"

namespace megasim::backend::detail {

inline constexpr std::size_t kStreams = 4;  // models::StreamKind values

// Facts about one stage program that every unit of the stage shares.
struct StageInfo {
  std::vector<std::int32_t> dep_count;         // deps per task
  std::vector<std::int32_t> dependents_begin;  // CSR: dependents of task i at [begin[i], begin[i+1])
  std::vector<std::int32_t> dependents;
  std::array<std::vector<std::int32_t>, kStreams> stream_tasks;  // per stream, in program order
  std::vector<std::int32_t> peer_task;                           // kPpSend/kPpRecv: its match on the peer stage
  std::vector<std::int32_t> dp_call;                             // kDpCollective: k (k-th on the stage)
  // Per task, compact copies of the models::Task fields the hot path reads (finish_task reads kind
  // and stream for every dependent; post and start_transfer the peer and the bytes), so that it does
  // not touch the tasks themselves, which are large.
  std::vector<models::TaskKind> kind;
  std::vector<std::uint8_t> stream;
  std::vector<std::int8_t> peer_offset;  // kPpSend / kPpRecv: +1 or -1
  std::vector<double> bytes;
  std::int32_t dp_calls = 0;
};

// Compute task durations of one (stage, slowdown, TP group layout); 0 for other tasks.
struct TaskTimes {
  std::vector<sim::SimTime> duration;
  std::vector<sim::SimTime> tp_exposed;
};

enum class TaskStatus : std::uint8_t { kWaiting, kStarted, kDone };

// A task's progress on one unit, in 4 bytes: a finished task reads and updates both for each of its
// dependents, and 16 of them share a cache line.
struct TaskState {
  std::int16_t pending = 0;  // deps not yet done (stage_structure checks that it fits)
  TaskStatus status = TaskStatus::kWaiting;
};
static_assert(sizeof(TaskState) == 4);

// Aligned to a cache line, with what every event of the unit reads first (stage, task states,
// stream heads, busy flags, times) in that line: the units do not stay in cache between two events
// of one unit.
struct alignas(64) Unit {
  std::int32_t stage = 0;
  std::int32_t replica = 0;
  std::vector<TaskState> tasks;                // per task of the stage program
  std::array<std::uint32_t, kStreams> next{};  // position of the stream's head in stream_tasks
  std::array<bool, kStreams> busy{};           // a blocking task is running on the stream
  const TaskTimes* times = nullptr;
  std::vector<topo::GpuId> gpus;  // by TP rank
  // The routes of its TP ranks' PP sends, [direction * tp + tp rank], direction 0 to the next stage
  // and 1 to the previous one: every send of a TP rank to a peer crosses the same lane (its
  // connection on its pipeline communicator).
  std::vector<RouteHint> send_routes;
};

// A PP transfer: one flow per TP rank (executor_p2p.cc), by transfer number.
struct Transfer {
  std::int32_t send_unit = -1;
  std::int32_t send_task = -1;
  std::int32_t recv_unit = -1;
  std::int32_t recv_task = -1;
  std::int32_t flows_left = 0;  // its TP ranks' flows still sending
  sim::SimTime delivered = 0;   // when the last byte of those done so far arrives
};

// The k-th DP call of a stage.
struct DpCall {
  std::int32_t issued = 0;   // replicas that reached it
  std::int32_t running = 0;  // its tp collectives not yet finished
  std::int32_t task = -1;
};

// A DP collective planned once and run by every call of its kind.
struct PlannedDpCollective {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  double bytes = 0;
  std::shared_ptr<const models::CollectivePlan> plan;
};

// Per-kernel-list cost inputs at slowdown 1.
struct KernelCost {
  double compute_s = 0;
  double gemm_s = 0;
  double ring_attention_s = 0;
};

// executor_stages.cc
StageInfo stage_structure(const models::StageProgram& program);
void match_p2p(const models::Workload& workload, std::vector<StageInfo>& stages);

// executor_costs.cc
std::vector<KernelCost> kernel_costs(const IterationInputs& in);
// `scale`: per task, a multiplier on its compute time (nullptr: 1). The calibration gives the SM
// share of overlapped TP collectives and the host times of host synchronisations (a task's
// host_sync adds host_sync_gap, a synchronous data loading also get_batch_host), which neither the
// slowdown nor the scale stretch: they are the host's.
TaskTimes task_times(const models::StageProgram& program, const std::vector<KernelCost>& costs,
                     const std::vector<TpTime>& tp, double slowdown, const std::vector<float>* scale,
                     const models::ComputeCalibration& calibration);

class Executor {
 public:
  explicit Executor(const IterationInputs& in);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  Trace run(IterationStats* stats);

 private:
  // iteration_executor.cc
  void build_stages();
  void build_units();
  void build_pauses();
  void assign_times(const std::vector<KernelCost>& costs);
  void build_dp_groups();
  void check_finished() const;
  void fill_flows();

  // executor_streams.cc
  void try_advance(std::int32_t u, std::size_t stream);
  void start_task(std::int32_t u, std::int32_t task);
  void finish_task(std::int32_t u, std::int32_t task);

  // executor_p2p.cc
  void post(std::int32_t u, std::int32_t task);
  void start_transfer(std::int32_t send_unit, std::int32_t send_task, std::int32_t recv_unit, std::int32_t recv_task);
  // A flow of the transfer has sent its last byte, delivered at `delivered`; the transfer ends, for
  // its send and recv, when the last of its flows is delivered.
  void on_transfer_sent(std::int32_t transfer, sim::SimTime delivered);

  // executor_dp.cc
  void issue_dp(std::int32_t u, std::int32_t task);
  void launch_dp(std::int32_t stage, std::int32_t call);
  // The plan of `task` (a DP collective) over DP group `group`, made on first use.
  const std::shared_ptr<const models::CollectivePlan>& dp_plan(std::size_t group, const models::Task& task);
  void on_dp_done(std::int32_t stage, std::int32_t call);

  // The simulated unit of (stage, replica): all of them, or with one_replica replica 0's.
  [[nodiscard]] std::int32_t unit_of(std::int64_t stage, std::int64_t replica) const {
    return static_cast<std::int32_t>(replica + replicas_ * stage);
  }
  // NCCL communicator ids: one per DP group (stage, TP rank), then one per pipeline group (replica,
  // TP rank), then one per expert-data-parallel group, so concurrent collectives and transfers keep
  // their own QPs.
  [[nodiscard]] std::uint64_t pipeline_communicator(std::int64_t replica, std::int64_t tp_rank) const {
    return static_cast<std::uint64_t>(pp_ * tp_ + replica * tp_ + tp_rank);
  }
  // The DP groups a DP task of `stage` runs over, as indices into dp_members_: the stage's tp DP
  // groups, or its etp x ep expert-data-parallel groups (after every stage's DP groups), and the
  // communicator of each (the expert groups' after the pipeline groups').
  [[nodiscard]] std::pair<std::size_t, std::size_t> dp_groups_of(std::int64_t stage, models::DpGroup group) const {
    if (group == models::DpGroup::kData) return {static_cast<std::size_t>(stage * tp_), static_cast<std::size_t>(tp_)};
    return {static_cast<std::size_t>(pp_ * tp_ + stage * expert_groups_), static_cast<std::size_t>(expert_groups_)};
  }
  [[nodiscard]] std::uint64_t group_communicator(std::size_t group) const {
    const auto dense = static_cast<std::size_t>(pp_ * tp_);
    if (group < dense) return static_cast<std::uint64_t>(group);
    return static_cast<std::uint64_t>(pp_ * tp_ + dp_ * tp_) + (group - dense);
  }
  [[nodiscard]] const models::Task& task_of(std::int32_t u, std::int32_t task) const {
    return workload_.stages[static_cast<std::size_t>(units_[static_cast<std::size_t>(u)].stage)]
        .tasks[static_cast<std::size_t>(task)];
  }
  [[nodiscard]] TaskRecord& record(std::int32_t u, std::int32_t task) {
    return trace_.units[static_cast<std::size_t>(u)].records[static_cast<std::size_t>(task)];
  }

  const IterationInputs& in_;
  const models::Workload& workload_;
  const topo::Topology& topo_;
  std::int64_t tp_ = 1, pp_ = 1, dp_ = 1;
  std::int64_t replicas_ = 1;       // replicas simulated: dp_, or 1 with one_replica
  std::int64_t expert_groups_ = 0;  // expert-data-parallel groups per stage (etp x ep); 0 for a dense model
  sim::Simulator sim_;              // declared before the fabric and runner, which must not outlive it
  Fabric fabric_;
  CollectiveRunner runner_;
  std::vector<StageInfo> stages_;
  std::vector<Unit> units_;
  std::vector<PauseSchedule> pauses_;          // per unit; empty without pauses
  std::deque<TaskTimes> times_;                // stable addresses for Unit::times
  std::vector<std::vector<DpCall>> dp_calls_;  // [stage][call]
  // [stage * tp + tp rank]: GPUs by replica; then for an MoE plan [pp * tp + stage * expert_groups_
  // + expert index]: the expert-data-parallel groups' GPUs by expert-DP rank.
  std::vector<std::vector<topo::GpuId>> dp_members_;
  std::vector<std::vector<std::int64_t>> dp_servers_;  // servers_of(dp_members_)
  // A plan depends on the members' servers only, not on their GPUs: group -> the first group of
  // the same stage and kind with the same servers (the stage's tp groups have the same ones
  // whenever TP fills the server), whose plans all of them use.
  std::vector<std::size_t> dp_plan_group_;
  std::vector<std::vector<PlannedDpCollective>> dp_plans_;  // [group]: the plans made so far
  std::vector<Transfer> transfers_;                         // by transfer number
  std::vector<std::int32_t> free_transfers_;                // numbers of ended transfers, reused unless recording flows
  std::vector<std::int32_t> transfer_of_flow_;  // when recording flows, by FlowId value: its transfer, or -1
  FlowSpec transfer_spec_;                      // start_transfer's, reused (set up in the constructor)
  std::uint64_t dp_collectives_ = 0;
  Trace trace_;
};

}  // namespace megasim::backend::detail
