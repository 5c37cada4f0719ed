#include "cli/cpu_runs.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "backend/cpu/cpu_timing.h"
#include "backend/cpu/mpi_launch.h"
#include "backend/cpu/mpi_probe.h"
#include "backend/cpu/mpi_session.h"
#include "models/parallel_groups.h"
#include "models/plan.h"
#include "sim/error.h"

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

double memory_gbytes_per_rank(int ranks) {
  return host_memory_gbytes() / ranks;
}

// Every rank gets rank 0's value, so that all ranks write and print the same report.
double from_rank_zero(double value) {
  backend::cpu::check_mpi(MPI_Bcast(&value, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD), "MPI_Bcast (calibration)");
  return value;
}

}  // namespace

double host_memory_gbytes() {
  return static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e9;
}

ProcessArgs& process_args() {
  static ProcessArgs args;
  return args;
}

void require_local_job(std::int64_t processes) {
  if (processes <= 1 || backend::cpu::started_by_mpi_launcher()) return;
  // Started here, every process shares this machine: a few per hardware thread at most (more is a
  // plan meant for a cluster, which a launcher spreads over machines).
  const std::int64_t limit = 4 * std::max<std::int64_t>(1, std::thread::hardware_concurrency());
  if (processes > limit) {
    throw sim::ConfigError("cluster.gpus", std::to_string(processes),
                           "at most " + std::to_string(limit) +
                               " ranks started on this machine (4 per hardware thread); start larger jobs with "
                               "mpirun or srun across machines");
  }
}

void run_as_mpi_job(std::int64_t processes, const std::function<void(int rank)>& body) {
  require_local_job(processes);
  if (processes > 1 && !backend::cpu::started_by_mpi_launcher()) {
    ProcessArgs& a = process_args();
    backend::cpu::exec_under_mpirun(static_cast<int>(processes), a.argc, a.argv);
  }
  backend::cpu::MpiSession session(nullptr, nullptr);
  if (session.size() != processes) {
    throw sim::ConfigError("cluster.gpus", std::to_string(processes),
                           "the number of MPI processes of the job (" + std::to_string(session.size()) + ")");
  }
  try {
    body(session.rank());
  } catch (const sim::ConfigError& e) {
    if (session.size() == 1) throw;
    std::cerr << "megasim: error on rank " << session.rank() << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 2);
  } catch (const std::exception& e) {
    if (session.size() == 1) throw;
    std::cerr << "megasim: internal error on rank " << session.rank() << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

scenarios::CpuCalibrationReport measure_cpu_calibration(const scenarios::Scenario& scenario, int repetitions) {
  int ranks = 1;
  backend::cpu::check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
  backend::cpu::TimingOptions timing;
  timing.repetitions = repetitions;
  scenarios::CpuCalibrationProbe probe;
  probe.device = cpu_device_name();
  probe.memory_gbytes_per_rank = memory_gbytes_per_rank(ranks);
  probe.links.ranks = ranks;
  // Links first, with every rank idle otherwise; then the ops, timed on all ranks at once. Hosts are
  // MPI_COMM_TYPE_SHARED groups; a job on one host measures only the intra-node link.
  const backend::HostGroups hosts = backend::cpu::world_host_groups();
  probe.links.hosts = hosts.host_count();
  probe.links.ranks_per_host = hosts.ranks_per_host;
  std::optional<backend::cpu::HostComm> intra;
  std::optional<backend::cpu::HostComm> inter;
  // The ping-pong of a link kind the job has, and the communicator of its groups.
  const auto measure_link = [&hosts](backend::HostLink link, double& latency_s, double& bytes_per_s,
                                     std::optional<backend::cpu::HostComm>& comm) {
    if (!hosts.measurable(link)) return;
    const auto [first, second] = hosts.ping_pong_pair(link);
    const backend::cpu::LinkFit p2p = backend::cpu::measure_point_to_point_between(first, second);
    latency_s = p2p.latency_s;
    bytes_per_s = p2p.bytes_per_s;
    comm.emplace(hosts, link);
  };
  measure_link(backend::HostLink::kIntraNode, probe.links.p2p_latency_s, probe.links.p2p_bytes_per_s, intra);
  measure_link(backend::HostLink::kInterNode, probe.links.inter_p2p_latency_s, probe.links.inter_p2p_bytes_per_s,
               inter);
  if (ranks > 1) {
    // Over the ranks of a host (one host: the whole job, as before), else over one rank per host.
    const backend::cpu::HostComm& small_group = intra ? *intra : *inter;
    probe.links.allreduce_small_bytes = 8.0 * 1024;
    probe.links.allreduce_small_ranks =
        hosts.members(intra ? backend::HostLink::kIntraNode : backend::HostLink::kInterNode);
    probe.links.allreduce_small_s = from_rank_zero(backend::cpu::measure_collective_s(
        small_group.get(), models::CollectiveOp::kAllReduce, probe.links.allreduce_small_bytes, repetitions));
  }
  probe.host_collective_seconds = [&](backend::HostLink link, models::CollectiveOp op, double bytes) {
    const backend::cpu::HostComm& group = link == backend::HostLink::kIntraNode ? intra.value() : inter.value();
    return from_rank_zero(backend::cpu::measure_collective_s(group.get(), op, bytes, repetitions));
  };
  const models::ResolvedPlan plan =
      models::resolve_plan(scenario.model, scenario.plan, scenario.cluster.gpus, scenario.cluster.gpus_per_server);
  int rank = 0;
  backend::cpu::check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  const backend::cpu::RankGroups groups(models::ParallelLayout{plan.tp, plan.pp, plan.dp}, rank);
  // Every group of a kind measures at once, as they all run at once in an iteration.
  probe.collective_seconds = [&](models::GroupKind group, models::CollectiveOp op, double bytes) {
    const MPI_Comm comm = group == models::GroupKind::kTensor ? groups.tensor() : groups.data();
    return from_rank_zero(backend::cpu::measure_collective_s(comm, op, bytes, repetitions));
  };
  probe.gemm_seconds = [&](const models::GemmShape& shape) {
    return from_rank_zero(backend::cpu::time_gemm_s(shape, timing));
  };
  probe.memory_op_seconds = [&](double bytes) { return from_rank_zero(backend::cpu::time_memory_op_s(bytes, timing)); };
  probe.op_overhead_s = [&] { return from_rank_zero(backend::cpu::time_op_overhead_s(timing)); };
  return scenarios::run_cpu_calibration(scenario, probe);
}

}  // namespace megasim::cli
