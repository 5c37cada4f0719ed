// Data-parallel collectives: the k-th DP task of a stage is one NCCL call on each of the stage's tp
// DP groups (or, for the experts' buckets of an MoE plan, on each of its etp x ep
// expert-data-parallel groups). NCCL starts moving data only when every member has called it, so the call waits for
// the last replica to issue it; each group then runs its ring on the fabric, and the task ends in
// every replica when the last group is done (the replicas of a stage wait on the same calls). With
// one_replica the call waits for the one simulated replica and still runs over every replica's GPUs.
#include "backend/sim/executor_impl.h"
#include "sim/error.h"

namespace megasim::backend::detail {
namespace {

// Below this an all-reduce's time is its steps' latency (at 25 GB/s a step of 64 KiB takes 2.6 µs,
// under the 5 µs of a network step, collective.net_step_latency_us).
constexpr double kTreeAllReduceMaxBytes = 64 * 1024;

}  // namespace

void Executor::issue_dp(std::int32_t u, std::int32_t task) {
  const Unit& unit = units_[static_cast<std::size_t>(u)];
  const std::int32_t call = stages_[static_cast<std::size_t>(unit.stage)].dp_call[static_cast<std::size_t>(task)];
  DpCall& c = dp_calls_[static_cast<std::size_t>(unit.stage)][static_cast<std::size_t>(call)];
  MEGASIM_ASSERT(c.task == task, "replicas of a stage disagree on their DP calls");
  if (++c.issued == replicas_) launch_dp(unit.stage, call);
}

void Executor::launch_dp(std::int32_t stage, std::int32_t call) {
  DpCall& c = dp_calls_[static_cast<std::size_t>(stage)][static_cast<std::size_t>(call)];
  const models::Task& task = workload_.stages[static_cast<std::size_t>(stage)].tasks[static_cast<std::size_t>(c.task)];
  for (std::int64_t d = 0; d < replicas_; ++d) record(unit_of(stage, d), c.task).transfer_start = sim_.now();
  const auto [first, count] = dp_groups_of(stage, task.group);
  c.running = static_cast<std::int32_t>(count);
  for (std::size_t group = first; group < first + count; ++group) {
    CollectiveJob job;
    job.members = dp_members_[group];
    job.plan = dp_plan(group, task);
    job.communicator = static_cast<std::int64_t>(group_communicator(group));
    runner_.start(std::move(job), [this, stage, call](const CollectiveResult&) { on_dp_done(stage, call); });
    ++dp_collectives_;
  }
}

const std::shared_ptr<const models::CollectivePlan>& Executor::dp_plan(std::size_t group, const models::Task& task) {
  std::vector<PlannedDpCollective>& plans = dp_plans_[dp_plan_group_[group]];
  for (const PlannedDpCollective& p : plans) {
    if (p.op == task.op && p.bytes == task.bytes) return p.plan;
  }
  // NCCL's tuner runs a latency-bound all-reduce (the per-micro-batch loss average, a few bytes) as
  // a tree, whose 2 log2(n) steps beat the ring's 2(n - 1); bandwidth-bound ones as rings.
  const bool latency_bound = task.op == models::CollectiveOp::kAllReduce && task.bytes <= kTreeAllReduceMaxBytes;
  auto plan = std::make_shared<const models::CollectivePlan>(models::plan_collective(
      task.op, latency_bound ? models::CollectiveAlgorithm::kTree : models::CollectiveAlgorithm::kRing, task.bytes,
      dp_servers_[dp_plan_group_[group]], in_.collective));
  return plans.emplace_back(PlannedDpCollective{task.op, task.bytes, std::move(plan)}).plan;
}

void Executor::on_dp_done(std::int32_t stage, std::int32_t call) {
  DpCall& c = dp_calls_[static_cast<std::size_t>(stage)][static_cast<std::size_t>(call)];
  MEGASIM_ASSERT(c.running > 0, "a DP collective ended that was not running");
  if (--c.running > 0) return;
  for (std::int64_t d = 0; d < replicas_; ++d) finish_task(unit_of(stage, d), c.task);
}

}  // namespace megasim::backend::detail
