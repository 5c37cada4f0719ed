#include "cli/cpu_probe.h"

#include <mpi.h>

#include <fstream>
#include <optional>
#include <string>

#include "backend/cpu/cpu_timing.h"
#include "backend/cpu/mpi_probe.h"
#include "backend/cpu/mpi_session.h"
#include "cli/cpu_runs.h"
#include "models/parallel_groups.h"
#include "models/plan.h"

namespace megasim::cli {
namespace {

// "cpu: <processor model> (Eigen float32, one core per rank)".
std::string cpu_device_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string model = "unknown processor";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  return "cpu: " + model + " (Eigen float32, one core per rank)";
}

// Every rank gets rank 0's value, so that all ranks write and print the same report.
double from_rank_zero(double value) {
  backend::cpu::check_mpi(MPI_Bcast(&value, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast (calibration)");
  return value;
}

int world(int (*query)(MPI_Comm, int*), const char* what) {
  int value = 0;
  backend::cpu::check_mpi(query(MPI_COMM_WORLD, &value), what);
  return value;
}

models::ParallelLayout layout_of(const scenarios::Scenario& s) {
  const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
  return {plan.tp, plan.pp, plan.dp};
}

}  // namespace

// Hosts are MPI_COMM_TYPE_SHARED groups; a job on one host has only the intra-node link.
struct CpuProbeSession::Impl {
  explicit Impl(const scenarios::Scenario& s)
      : ranks(world(MPI_Comm_size, "MPI_Comm_size")),
        hosts(backend::cpu::world_host_groups()),
        groups(layout_of(s), world(MPI_Comm_rank, "MPI_Comm_rank")) {
    if (hosts.measurable(backend::HostLink::kIntraNode)) intra.emplace(hosts, backend::HostLink::kIntraNode);
    if (hosts.measurable(backend::HostLink::kInterNode)) inter.emplace(hosts, backend::HostLink::kInterNode);
  }

  // The ping-pong of a link kind the job has.
  void measure_link(backend::HostLink link, double& latency_s, double& bytes_per_s) const {
    if (!hosts.measurable(link)) return;
    const auto [first, second] = hosts.ping_pong_pair(link);
    const backend::cpu::LinkFit p2p = backend::cpu::measure_point_to_point_between(first, second);
    latency_s = p2p.latency_s;
    bytes_per_s = p2p.bytes_per_s;
  }

  int ranks = 1;
  backend::HostGroups hosts;
  backend::cpu::RankGroups groups;
  std::optional<backend::cpu::HostComm> intra;
  std::optional<backend::cpu::HostComm> inter;
};

CpuProbeSession::CpuProbeSession(const scenarios::Scenario& scenario) : impl_(std::make_unique<Impl>(scenario)) {}

CpuProbeSession::~CpuProbeSession() = default;

scenarios::CpuCalibrationProbe CpuProbeSession::probe(int repetitions) {
  Impl& s = *impl_;
  backend::cpu::TimingOptions timing;
  timing.repetitions = repetitions;
  scenarios::CpuCalibrationProbe probe;
  probe.device = cpu_device_name();
  probe.memory_gbytes_per_rank = host_memory_gbytes() / s.ranks;
  probe.links.ranks = s.ranks;
  probe.links.hosts = s.hosts.host_count();
  probe.links.ranks_per_host = s.hosts.ranks_per_host;
  // Links first, with every rank idle otherwise; then the ops, timed on all ranks at once.
  s.measure_link(backend::HostLink::kIntraNode, probe.links.p2p_latency_s, probe.links.p2p_bytes_per_s);
  s.measure_link(backend::HostLink::kInterNode, probe.links.inter_p2p_latency_s, probe.links.inter_p2p_bytes_per_s);
  if (s.ranks > 1) {
    // Over the ranks of a host (one host: the whole job), else over one rank per host.
    const backend::cpu::HostComm& small_group = s.intra ? *s.intra : *s.inter;
    probe.links.allreduce_small_bytes = 8.0 * 1024;
    probe.links.allreduce_small_ranks =
        s.hosts.members(s.intra ? backend::HostLink::kIntraNode : backend::HostLink::kInterNode);
    probe.links.allreduce_small_s = from_rank_zero(backend::cpu::measure_collective_s(
        small_group.get(), models::CollectiveOp::kAllReduce, probe.links.allreduce_small_bytes, repetitions));
  }
  probe.host_collective_seconds = [&s, repetitions](backend::HostLink link, models::CollectiveOp op, double bytes) {
    const backend::cpu::HostComm& group = link == backend::HostLink::kIntraNode ? s.intra.value() : s.inter.value();
    return from_rank_zero(backend::cpu::measure_collective_s(group.get(), op, bytes, repetitions));
  };
  // Every group of a kind measures at once, as they all run at once in an iteration.
  probe.collective_seconds = [&s, repetitions](models::GroupKind group, models::CollectiveOp op, double bytes) {
    const MPI_Comm comm = group == models::GroupKind::kTensor ? s.groups.tensor() : s.groups.data();
    return from_rank_zero(backend::cpu::measure_collective_s(comm, op, bytes, repetitions));
  };
  probe.gemm_seconds = [timing](const models::GemmShape& shape) {
    return from_rank_zero(backend::cpu::time_gemm_s(shape, timing));
  };
  probe.memory_op_seconds = [timing](double bytes) {
    return from_rank_zero(backend::cpu::time_memory_op_s(bytes, timing));
  };
  probe.op_overhead_s = [timing] { return from_rank_zero(backend::cpu::time_op_overhead_s(timing)); };
  return probe;
}

}  // namespace megasim::cli
