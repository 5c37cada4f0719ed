// Input checks, the units (one per stage and replica) with their durations and DP groups, and the
// run that turns them into a Trace.
#include "backend/sim/iteration_executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <utility>

#include "backend/sim/executor_impl.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

// The fabric keeps a record per flow only for a trace that lists flows.
FabricParams fabric_params(const IterationInputs& in) {
  FabricParams p = in.fabric;
  p.keep_flow_records = in.record_flows;
  return p;
}

// The structure the caller builds (workload, placement): internal errors when wrong.
void check_structure(const IterationInputs& in) {
  MEGASIM_ASSERT(in.workload != nullptr && in.topology != nullptr, "iteration inputs need a workload and a topology");
  const models::ResolvedPlan& plan = in.workload->plan;
  MEGASIM_ASSERT(plan.tp >= 1 && plan.pp >= 1 && plan.dp >= 1 && plan.cp >= 1, "the workload's plan is not resolved");
  MEGASIM_ASSERT(static_cast<std::int64_t>(in.placement.size()) == plan.tp * plan.pp * plan.replicas(),
                 "the placement needs one GPU per rank");
  MEGASIM_ASSERT(static_cast<std::int64_t>(in.workload->stages.size()) == plan.pp,
                 "the workload needs one stage program per pipeline stage");
  const std::int64_t gpus = in.topology->num_gpus();
  std::vector<bool> used(static_cast<std::size_t>(gpus), false);
  for (const topo::GpuId g : in.placement) {
    MEGASIM_ASSERT(g.valid() && g.value < gpus && !used[g.index()], "the placement needs distinct GPUs of the cluster");
    used[g.index()] = true;
  }
  for (const topo::LinkId l : in.failed_links) {
    MEGASIM_ASSERT(l.valid() && l.index() < in.topology->num_links(), "failed links must be links of the cluster");
  }
  MEGASIM_ASSERT(!in.one_replica || replicas_identical(in), "one_replica needs replicas that are identical");
}

// Values that come from the user (stragglers, calibrated times): ConfigError when wrong.
void check_values(const IterationInputs& in) {
  const std::int64_t gpus = in.topology->num_gpus();
  if (!in.gpu_slowdown.empty() && static_cast<std::int64_t>(in.gpu_slowdown.size()) != gpus) {
    throw sim::ConfigError("stragglers.gpu_slowdown", fmt::format("{} factors", in.gpu_slowdown.size()),
                           fmt::format("none or one per GPU ({})", gpus));
  }
  for (const double f : in.gpu_slowdown) {
    if (!(std::isfinite(f) && f >= 1)) {
      throw sim::ConfigError("stragglers.gpu_slowdown", fmt::format("{}", f), "a finite factor >= 1");
    }
  }
  const models::ParallelLayout layout = in.workload->plan.layout();
  const auto units = static_cast<std::size_t>(layout.pipeline * layout.data);
  if (!in.task_scale.empty() && in.task_scale.size() != units) {
    throw sim::ConfigError("stragglers.task_scale", fmt::format("{} units", in.task_scale.size()),
                           fmt::format("none or one per (stage, replica) unit ({})", units));
  }
  for (std::size_t u = 0; u < in.task_scale.size(); ++u) {
    const std::size_t tasks = in.workload->stages[u / static_cast<std::size_t>(layout.data)].tasks.size();
    if (!in.task_scale[u].empty() && in.task_scale[u].size() != tasks) {
      throw sim::ConfigError("stragglers.task_scale", fmt::format("{} factors for unit {}", in.task_scale[u].size(), u),
                             fmt::format("none or one per task of its stage ({})", tasks));
    }
    for (const float f : in.task_scale[u]) {
      if (!(std::isfinite(f) && f > 0)) {
        throw sim::ConfigError("stragglers.task_scale", fmt::format("{}", f), "a finite factor > 0");
      }
    }
  }
  for (const auto& [link, factor] : in.degraded_links) {
    if (!link.valid() || link.index() >= in.topology->num_links() || !(factor > 0 && factor <= 1)) {
      throw sim::ConfigError("stragglers.slow_links", fmt::format("link {} x{}", link.value, factor),
                             fmt::format("links 0 to {} with speed factors in (0, 1]", in.topology->num_links() - 1));
    }
  }
  if (in.gc_period > 0) {
    const auto tp = static_cast<std::size_t>(layout.tensor);
    if ((in.gc_phase.size() != units && in.gc_phase.size() != units * tp) || in.gc_pause < 0 ||
        in.gc_pause >= in.gc_period) {
      throw sim::ConfigError("stragglers.gc_period_s", fmt::format("{} ns", in.gc_period),
                             fmt::format("a period longer than the pause ({} ns), with one phase per unit ({}) or "
                                         "per rank ({})",
                                         in.gc_pause, units, units * tp));
    }
    for (const sim::SimTime phase : in.gc_phase) {
      if (phase < 0 || phase >= in.gc_period) {
        throw sim::ConfigError("stragglers.gc_period_s", fmt::format("phase {} ns", phase),
                               fmt::format("phases in [0, {}) ns", in.gc_period));
      }
    }
  }
  if (!in.kernel_times.empty() && in.kernel_times.size() != in.workload->kernels.size()) {
    throw sim::ConfigError("iteration.kernel_times", fmt::format("{} entries", in.kernel_times.size()),
                           fmt::format("none or one per kernel list ({})", in.workload->kernels.size()));
  }
  for (const KernelTime& k : in.kernel_times) {
    const auto valid = [](double s) { return std::isfinite(s) && s >= 0; };
    if (!(valid(k.compute_s) && valid(k.gemm_s) && valid(k.ring_attention_s))) {
      throw sim::ConfigError(
          "iteration.kernel_times",
          fmt::format("{} s, GEMMs {} s, ring attention {} s", k.compute_s, k.gemm_s, k.ring_attention_s),
          "finite times >= 0 s");
    }
  }
}

}  // namespace

namespace detail {

Executor::Executor(const IterationInputs& in)
    : in_(in),
      workload_(*in.workload),
      topo_(*in.topology),
      tp_(in.workload->plan.tp),
      pp_(in.workload->plan.pp),
      dp_(in.workload->plan.replicas()),
      replicas_(in.one_replica ? 1 : dp_),
      fabric_(sim_, *in.topology, fabric_params(in)),
      runner_(sim_, fabric_, in.collective) {
  transfer_spec_.add_path_latency = true;
  for (const topo::LinkId l : in.failed_links) fabric_.set_link_failed(l);
  for (const auto& [l, factor] : in.degraded_links) fabric_.set_link_speed_factor(l, factor);
  build_stages();
  build_units();
  build_pauses();
  assign_times(kernel_costs(in));
  build_dp_groups();
}

Executor::~Executor() = default;

void Executor::build_stages() {
  for (const models::StageProgram& program : workload_.stages) stages_.push_back(stage_structure(program));
  match_p2p(workload_, stages_);
}

void Executor::build_units() {
  const std::int64_t units = pp_ * replicas_;
  units_.resize(static_cast<std::size_t>(units));
  trace_.units.resize(static_cast<std::size_t>(units));
  for (std::int64_t u = 0; u < units; ++u) {
    Unit& unit = units_[static_cast<std::size_t>(u)];
    TraceUnit& out = trace_.units[static_cast<std::size_t>(u)];
    unit.stage = static_cast<std::int32_t>(u / replicas_);
    unit.replica = static_cast<std::int32_t>(u % replicas_);
    const std::int64_t layout_unit = unit.replica + dp_ * unit.stage;  // the trace's and the placement's
    for (std::int64_t t = 0; t < tp_; ++t) {
      out.ranks.push_back(layout_unit * tp_ + t);
      unit.gpus.push_back(in_.placement[static_cast<std::size_t>(layout_unit * tp_ + t)]);
    }
    unit.send_routes.resize(static_cast<std::size_t>(2 * tp_));
    out.stage = unit.stage;
    out.replica = unit.replica;
    const StageInfo& info = stages_[static_cast<std::size_t>(unit.stage)];
    unit.tasks.resize(info.dep_count.size());
    for (std::size_t i = 0; i < unit.tasks.size(); ++i) {
      unit.tasks[i] = {static_cast<std::int16_t>(info.dep_count[i]), TaskStatus::kWaiting};
    }
    out.records.resize(info.dep_count.size());
  }
}

void Executor::build_pauses() {
  if (in_.gc_period <= 0 || in_.gc_pause <= 0) return;
  const std::size_t members = in_.gc_phase.size() / units_.size();
  pauses_.reserve(units_.size());
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const std::span<const sim::SimTime> phases(in_.gc_phase.data() + u * members, members);
    const PauseSchedule& schedule = pauses_.emplace_back(phases, in_.gc_period, in_.gc_pause);
    if (schedule.covers_period()) {
      throw sim::ConfigError("stragglers.gc_pause_s", fmt::format("{} ns", in_.gc_pause),
                             fmt::format("pauses that leave a TP group time to compute: the {} ranks of unit {} "
                                         "together pause for the whole period of {} ns",
                                         members, u, in_.gc_period));
    }
  }
}

namespace {

// Units whose groups each sit inside one server see the same collective times (the closed form
// of one NVLink port's rate); the others' depend on where their groups' GPUs are. The key names the
// GPUs of the groups that span servers, -1 for each group that does not.
std::vector<std::int64_t> tp_time_key(const topo::Topology& topo, const ComputeGroupGpus& groups) {
  std::vector<std::int64_t> key;
  for (const std::vector<topo::GpuId>* group :
       {&groups.tensor, &groups.expert, &groups.expert_tensor, &groups.expert_tensor_and_expert, &groups.context}) {
    if (in_one_server(topo, *group)) {
      key.push_back(-1);
      continue;
    }
    for (const topo::GpuId g : *group) key.push_back(static_cast<std::int64_t>(g.index()));
    key.push_back(-2);
  }
  return key;
}

// Registers, for each stage and each kind of compute group the workload's collectives use, the
// stage's groups of that kind when one of them spans servers; returns the set ids by
// [stage][kind], -1 where the groups are timed alone.
std::vector<std::array<std::int64_t, kComputeGroupKinds>> register_peer_sets(const models::Workload& workload,
                                                                             const std::vector<topo::GpuId>& placement,
                                                                             const topo::Topology& topo,
                                                                             PeerCollectiveTimes& peers) {
  std::array<bool, kComputeGroupKinds> used{};
  for (const models::KernelList& list : workload.kernels) {
    for (const models::TpCollective& c : list.tp_collectives) {
      if (c.count > 0) used[static_cast<std::size_t>(c.group)] = true;
    }
  }
  std::vector<std::array<std::int64_t, kComputeGroupKinds>> sets(static_cast<std::size_t>(workload.plan.pp));
  for (std::int64_t s = 0; s < workload.plan.pp; ++s) {
    auto& of_stage = sets[static_cast<std::size_t>(s)];
    of_stage.fill(-1);
    for (std::size_t k = 0; k < kComputeGroupKinds; ++k) {
      if (!used[k]) continue;
      std::vector<std::vector<topo::GpuId>> groups =
          stage_groups(workload, placement, s, static_cast<models::ComputeGroup>(k));
      const bool spans = std::any_of(groups.begin(), groups.end(),
                                     [&](const std::vector<topo::GpuId>& g) { return !in_one_server(topo, g); });
      if (spans) of_stage[k] = static_cast<std::int64_t>(peers.add_set(std::move(groups)));
    }
  }
  return sets;
}

}  // namespace

// Units whose groups all sit inside one server, at slowdown 1 and without task scales, share their
// stage's durations; the others get their own. Collective times are shared by units whose groups
// are alike (tp_time_key); a group that spans servers is timed beside its stage's peers.
void Executor::assign_times(const std::vector<KernelCost>& costs) {
  std::map<std::vector<std::int64_t>, std::vector<TpTime>> tp_times;
  std::vector<const TaskTimes*> shared(static_cast<std::size_t>(pp_), nullptr);
  PeerCollectiveTimes peers(topo_, in_.fabric, in_.collective);
  const std::vector<std::array<std::int64_t, kComputeGroupKinds>> peer_sets =
      register_peer_sets(workload_, in_.placement, topo_, peers);
  for (Unit& unit : units_) {
    double slowdown = 1.0;
    for (const topo::GpuId g : unit.gpus) {
      if (!in_.gpu_slowdown.empty()) slowdown = std::max(slowdown, in_.gpu_slowdown[g.index()]);
    }
    ComputeGroupGpus groups = compute_groups(workload_, in_.placement, unit.gpus, unit.stage, unit.replica);
    groups.peer_set = peer_sets[static_cast<std::size_t>(unit.stage)];
    const std::vector<std::int64_t> key = tp_time_key(topo_, groups);
    const bool local = std::all_of(key.begin(), key.end(), [](std::int64_t k) { return k == -1; });
    const auto u = static_cast<std::size_t>(&unit - units_.data());
    const std::vector<float>* scale =
        in_.task_scale.empty() || in_.task_scale[u].empty() ? nullptr : &in_.task_scale[u];
    const models::StageProgram& program = workload_.stages[static_cast<std::size_t>(unit.stage)];
    const TaskTimes*& stage_times = shared[static_cast<std::size_t>(unit.stage)];
    if (local && slowdown == 1.0 && scale == nullptr && stage_times != nullptr) {
      unit.times = stage_times;
      continue;
    }
    auto found = tp_times.find(key);
    if (found == tp_times.end()) {
      found =
          tp_times
              .emplace(key, kernel_list_tp_times(workload_.kernels, topo_, in_.fabric, in_.collective, groups, &peers))
              .first;
    }
    unit.times = &times_.emplace_back(task_times(program, costs, found->second, slowdown, scale, in_.calibration));
    if (local && slowdown == 1.0 && scale == nullptr) stage_times = unit.times;
  }
}

void Executor::build_dp_groups() {
  const models::ParallelLayout layout = workload_.plan.layout();
  const models::ExpertLayout experts = workload_.plan.expert_layout();
  const bool moe = workload_.model.num_experts > 0;
  expert_groups_ = moe ? experts.expert_tensor * experts.expert : 0;
  const auto groups = static_cast<std::size_t>(pp_ * tp_ + pp_ * expert_groups_);
  dp_members_.resize(groups);
  dp_servers_.resize(groups);
  dp_plan_group_.resize(groups);
  dp_plans_.resize(groups);
  // Members of group `group`, then the first group of [first, group) with the same servers.
  const auto add_group = [&](std::size_t group, std::size_t first, std::vector<topo::GpuId> members) {
    dp_members_[group] = std::move(members);
    dp_servers_[group] = servers_of(topo_, dp_members_[group]);
    dp_plan_group_[group] = group;
    for (std::size_t g = first; g < group; ++g) {
      if (dp_servers_[g] == dp_servers_[group]) {
        dp_plan_group_[group] = g;
        break;
      }
    }
  };
  for (std::int64_t s = 0; s < pp_; ++s) {
    const auto [first, count] = dp_groups_of(s, models::DpGroup::kData);
    for (std::int64_t t = 0; t < tp_; ++t) {
      std::vector<topo::GpuId> members;
      for (std::int64_t d = 0; d < dp_; ++d) {
        members.push_back(in_.placement[static_cast<std::size_t>(layout.rank_of(t, d, s))]);
      }
      add_group(first + static_cast<std::size_t>(t), first, std::move(members));
    }
    if (moe) {
      const auto [expert_first, expert_count] = dp_groups_of(s, models::DpGroup::kExpertData);
      for (std::size_t c = 0; c < expert_count; ++c) {
        // The expert index c's ranks in this stage: expert-DP rank k at c + etp * ep * k.
        std::vector<topo::GpuId> members;
        for (const std::int64_t r : experts.expert_data_group(s * tp_ * dp_ + static_cast<std::int64_t>(c))) {
          members.push_back(in_.placement[static_cast<std::size_t>(r)]);
        }
        add_group(expert_first + c, expert_first, std::move(members));
      }
    }
    const StageInfo& info = stages_[static_cast<std::size_t>(s)];
    auto& calls = dp_calls_.emplace_back(static_cast<std::size_t>(info.dp_calls));
    for (std::size_t i = 0; i < info.dp_call.size(); ++i) {
      if (info.dp_call[i] >= 0) calls[static_cast<std::size_t>(info.dp_call[i])].task = static_cast<std::int32_t>(i);
    }
  }
}

Trace Executor::run(IterationStats* stats) {
  sim_.schedule_at(0, [this] {
    for (std::size_t u = 0; u < units_.size(); ++u) {
      for (std::size_t s = 0; s < kStreams; ++s) try_advance(static_cast<std::int32_t>(u), s);
    }
  });
  sim_.run();
  check_finished();
  trace_.backend = "sim";
  for (const TraceUnit& unit : trace_.units) {
    for (const TaskRecord& r : unit.records) trace_.iteration_time = std::max(trace_.iteration_time, r.end);
  }
  if (in_.record_flows) fill_flows();
  if (stats != nullptr) {
    stats->events = sim_.events_processed();
    stats->rate_recomputations = fabric_.rate_recomputations();
    stats->region_recomputations = fabric_.region_recomputations();
    stats->region_rounds = fabric_.region_rounds();
    stats->flows = fabric_.completed_flow_count();
    stats->dp_collectives = dp_collectives_;
  }
  return std::move(trace_);
}

// A task left unfinished with flows stalled for good (no events are left to revive them) means a
// partitioned fabric: UnroutableIteration. Without stalled flows it means the workload's order is
// cyclic (e.g. blocking sends whose recvs are posted behind other sends on the peer): an internal
// error of the workload builder, reported with the first stuck task of the first stuck unit.
void Executor::check_finished() const {
  if (const std::optional<FlowLane> lane = fabric_.first_stalled_lane()) {
    throw UnroutableIteration(fabric_.stalled_flows(), lane->src, lane->dst);
  }
  for (const Unit& unit : units_) {
    for (std::size_t i = 0; i < unit.tasks.size(); ++i) {
      if (unit.tasks[i].status == TaskStatus::kDone) continue;
      const models::Task& t = workload_.stages[static_cast<std::size_t>(unit.stage)].tasks[i];
      const std::string message = fmt::format(
          "the workload deadlocked: task {} (kind {}, tag {}) of stage {} replica {} {} at t = {} ns", i,
          static_cast<int>(t.kind), t.tag, unit.stage, unit.replica,
          unit.tasks[i].status == TaskStatus::kStarted ? "started and never ended" : "never started", sim_.now());
      sim::assertion_failed("all tasks done", __FILE__, __LINE__, message.c_str());
    }
  }
}

void Executor::fill_flows() {
  for (const FlowRecord& f : fabric_.completed_flows()) {
    FlowTraceRecord& out = trace_.flows.emplace_back();
    out.start = f.start;
    out.end = f.end;
    out.bytes_per_lane = f.bytes_per_lane;
    out.lanes = f.lanes;
    const std::int32_t transfer = f.id.index() < transfer_of_flow_.size() ? transfer_of_flow_[f.id.index()] : -1;
    const Transfer* t = transfer >= 0 ? &transfers_[static_cast<std::size_t>(transfer)] : nullptr;
    if (t == nullptr) {
      out.label = "dp collective";
      continue;
    }
    const Unit& from = units_[static_cast<std::size_t>(t->send_unit)];
    const Unit& to = units_[static_cast<std::size_t>(t->recv_unit)];
    const bool forward = task_of(t->send_unit, t->send_task).category != models::TaskCategory::kPipelineBackward;
    out.label =
        fmt::format("pp {} stage {} -> {} replica {}", forward ? "fwd" : "bwd", from.stage, to.stage, from.replica);
  }
}

}  // namespace detail

UnroutableIteration::UnroutableIteration(std::uint64_t stalled_flows, topo::GpuId src, topo::GpuId dst)
    : std::runtime_error(fmt::format("the iteration cannot finish: {} flows have no path on the damaged fabric "
                                     "(the first from GPU {} to GPU {})",
                                     stalled_flows, src.value, dst.value)),
      stalled_flows_(stalled_flows) {}

Trace simulate_iteration(const IterationInputs& inputs, IterationStats* stats) {
  check_structure(inputs);
  check_values(inputs);
  detail::Executor executor(inputs);
  return executor.run(stats);
}

}  // namespace megasim::backend
