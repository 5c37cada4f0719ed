#include "backend/cpu/cpu_probe.h"

#include <mpi.h>

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_timing.h"
#include "backend/cpu/host_machine.h"
#include "backend/cpu/mpi_probe.h"
#include "backend/mpi/mpi_session.h"
#include "models/parallel_groups.h"
#include "models/plan.h"

namespace megasim::backend::cpu {

// What the calibration asks about an op: a product by its shape, a memory-bound op by its bytes.
// (Outside the anonymous namespace: CpuProbeSession::Impl holds maps keyed by it.)
struct ProbedOpKey {
  bool product = false;
  std::int64_t m = 0, n = 0, k = 0, batch = 0;
  double bytes = 0;
  auto operator<=>(const ProbedOpKey&) const = default;
};

namespace {

// Every rank gets `root`'s value, so that all ranks write and print the same report.
double from_rank(int root, double value) {
  mpi::check_mpi(MPI_Bcast(&value, 1, MPI_DOUBLE, root, MPI_COMM_WORLD), "MPI_Bcast (calibration)");
  return value;
}

int world(int (*query)(MPI_Comm, int*), const char* what) {
  int value = 0;
  mpi::check_mpi(query(MPI_COMM_WORLD, &value), what);
  return value;
}

ProbedOpKey key_of(const models::LayerOp& op) {
  if (op.kind == models::OpKind::kGemm || op.kind == models::OpKind::kAttention) {
    return {true, op.shape.m, op.shape.n, op.shape.k, op.shape.batch, 0};
  }
  return {false, 0, 0, 0, 0, op.bytes};
}

// The compute ops of `stage` in the order its program runs them (compute tasks in program order,
// each run's kernel list `repeat` times).
std::vector<models::LayerOp> compute_sequence(const models::Workload& w, std::int64_t stage) {
  std::vector<models::LayerOp> out;
  for (const models::Task& task : w.stages.at(static_cast<std::size_t>(stage)).tasks) {
    if (task.kind != models::TaskKind::kCompute) continue;
    for (const models::Task::KernelRun& run : task.runs) {
      const models::KernelList& list = w.kernels.at(static_cast<std::size_t>(run.kernels));
      for (std::int32_t r = 0; r < run.repeat; ++r) out.insert(out.end(), list.ops.begin(), list.ops.end());
    }
  }
  return out;
}

}  // namespace

// Hosts are MPI_COMM_TYPE_SHARED groups; a job on one host has only the intra-node link.
struct CpuProbeSession::Impl {
  explicit Impl(const models::Workload& w)
      : ranks(world(MPI_Comm_size, "MPI_Comm_size")),
        rank(world(MPI_Comm_rank, "MPI_Comm_rank")),
        plan(w.plan),
        layout(plan.layout()),
        workload(w),
        hosts(world_host_groups()),
        groups(layout, rank),
        timer(compute_sequence(workload, layout.pp_rank(rank))) {
    if (hosts.measurable(HostLink::kIntraNode)) intra.emplace(hosts, HostLink::kIntraNode);
    if (hosts.measurable(HostLink::kInterNode)) inter.emplace(hosts, HostLink::kInterNode);
    // An op is answered by the first rank of the first stage that runs it.
    for (std::int64_t stage = plan.pp - 1; stage >= 0; --stage) {
      for (const models::LayerOp& op : compute_sequence(workload, stage)) {
        owner[key_of(op)] = static_cast<int>(layout.rank_of(0, 0, stage));
      }
    }
  }

  // The ping-pong of a link kind the job has.
  void measure_link(HostLink link, double& latency_s, double& bytes_per_s) const {
    if (!hosts.measurable(link)) return;
    const auto [first, second] = hosts.ping_pong_pair(link);
    const LinkFit p2p = measure_point_to_point_between(first, second);
    latency_s = p2p.latency_s;
    bytes_per_s = p2p.bytes_per_s;
  }

  // This rank's stage's compute timed in place: per op key, the mean of its calls' median times.
  void time_compute(int passes) {
    const std::vector<double> seconds = timer.time(passes);
    std::map<ProbedOpKey, std::pair<double, int>> sums;
    for (std::size_t i = 0; i < seconds.size(); ++i) {
      auto& [total, calls] = sums[key_of(timer.sequence()[i])];
      total += seconds[i];
      ++calls;
    }
    op_seconds.clear();
    for (const auto& [key, sum] : sums) op_seconds[key] = sum.first / sum.second;
  }

  // The time in place of an op of the plan, from the rank that ran it. Collective over the world.
  double op_time(const ProbedOpKey& key) const {
    const auto who = owner.find(key);
    const int root = who == owner.end() ? 0 : who->second;
    const auto mine = op_seconds.find(key);
    return from_rank(root, rank == root && mine != op_seconds.end() ? mine->second : 0);
  }

  int ranks = 1;
  int rank = 0;
  const models::ResolvedPlan& plan;
  models::ParallelLayout layout;
  const models::Workload& workload;
  HostGroups hosts;
  mpi::RankGroups groups;
  std::optional<HostComm> intra;
  std::optional<HostComm> inter;
  SequenceTimer timer;
  std::map<ProbedOpKey, int> owner;
  std::map<ProbedOpKey, double> op_seconds;  // this rank's, of the last probe()
};

CpuProbeSession::CpuProbeSession(const models::Workload& workload) : impl_(std::make_unique<Impl>(workload)) {}

CpuProbeSession::~CpuProbeSession() = default;

CpuProbe CpuProbeSession::probe(int repetitions) {
  Impl& s = *impl_;
  TimingOptions timing;
  timing.repetitions = repetitions;
  CpuProbe probe;
  probe.device = cpu_device_name();
  probe.memory_gbytes_per_rank = host_memory_gbytes() / s.ranks;
  probe.links.ranks = s.ranks;
  probe.links.hosts = s.hosts.host_count();
  probe.links.ranks_per_host = s.hosts.ranks_per_host;
  // Links first, with every rank idle otherwise; then the compute of every stage at once, in place,
  // as an iteration runs it; the collectives are then timed after it, as an iteration's follow its
  // backward.
  s.measure_link(HostLink::kIntraNode, probe.links.p2p_latency_s, probe.links.p2p_bytes_per_s);
  s.measure_link(HostLink::kInterNode, probe.links.inter_p2p_latency_s, probe.links.inter_p2p_bytes_per_s);
  if (s.ranks > 1) {
    // Over the ranks of a host (one host: the whole job), else over one rank per host.
    const HostComm& small_group = s.intra ? *s.intra : *s.inter;
    probe.links.allreduce_small_bytes = 8.0 * 1024;
    probe.links.allreduce_small_ranks = s.hosts.members(s.intra ? HostLink::kIntraNode : HostLink::kInterNode);
    probe.links.allreduce_small_s =
        from_rank(0, measure_collective_s(small_group.get(), models::CollectiveOp::kAllReduce,
                                          probe.links.allreduce_small_bytes, repetitions));
  }
  s.time_compute(repetitions);
  probe.host_collective_seconds = [&s, repetitions](HostLink link, models::CollectiveOp op, double bytes) {
    const HostComm& group = link == HostLink::kIntraNode ? s.intra.value() : s.inter.value();
    return from_rank(0, measure_collective_s(group.get(), op, bytes, repetitions));
  };
  // Every group of a kind measures at once, as they all run at once in an iteration.
  probe.collective_seconds = [&s, repetitions](models::GroupKind group, models::CollectiveOp op, double bytes) {
    const MPI_Comm comm = group == models::GroupKind::kTensor ? s.groups.tensor() : s.groups.data();
    return from_rank(0, measure_collective_s(comm, op, bytes, repetitions));
  };
  probe.gemm_seconds = [&s](const models::GemmShape& shape) {
    return s.op_time({true, shape.m, shape.n, shape.k, shape.batch, 0});
  };
  probe.memory_op_seconds = [&s](double bytes) { return s.op_time({false, 0, 0, 0, 0, bytes}); };
  probe.op_overhead_s = [timing] { return from_rank(0, time_op_overhead_s(timing)); };
  return probe;
}

}  // namespace megasim::backend::cpu
