// Which replicas of an iteration are alike (iteration_executor.h: replicas_identical,
// replicas_alike_but_for_speed) and the slowest replica's speeds for every replica
// (slowest_replica_slowdowns). A unit (the TP group of one stage in one replica, placement ranks
// (replica + dp x stage) x tp + t) runs at its slowest GPU's slowdown (Executor::assign_times).
#include <algorithm>
#include <span>
#include <tuple>

#include "backend/sim/iteration_executor.h"
#include "backend/sim/tp_collective_time.h"

namespace megasim::backend {
namespace {

struct PlanShape {
  std::size_t tp;
  std::size_t pp;
  std::size_t dp;
};

PlanShape shape_of(const IterationInputs& in) {
  const models::ResolvedPlan& plan = in.workload->plan;
  return {static_cast<std::size_t>(plan.tp), static_cast<std::size_t>(plan.pp),
          static_cast<std::size_t>(plan.replicas())};
}

std::span<const topo::GpuId> unit_gpus(const IterationInputs& in, const PlanShape& p, std::size_t stage,
                                       std::size_t replica) {
  return std::span<const topo::GpuId>(in.placement).subspan((replica + p.dp * stage) * p.tp, p.tp);
}

// The slowdown unit (stage, replica) runs at: its slowest GPU's, 1 without slowdowns.
double unit_slowdown(const IterationInputs& in, const PlanShape& p, std::size_t stage, std::size_t replica) {
  double slowdown = 1.0;
  if (in.gpu_slowdown.empty()) return slowdown;
  for (const topo::GpuId g : unit_gpus(in, p, stage, replica))
    slowdown = std::max(slowdown, in.gpu_slowdown[g.index()]);
  return slowdown;
}

}  // namespace

bool replicas_alike_but_for_speed(const IterationInputs& in) {
  if (!in.task_scale.empty() || in.gc_period > 0 || !in.failed_links.empty() || !in.degraded_links.empty()) {
    return false;
  }
  const auto tp = static_cast<std::size_t>(in.workload->plan.tp);
  for (std::size_t first = 0; first + tp <= in.placement.size(); first += tp) {
    if (!in_one_server(*in.topology, std::span<const topo::GpuId>(in.placement).subspan(first, tp))) return false;
  }
  return true;
}

bool replicas_identical(const IterationInputs& in) {
  if (!replicas_alike_but_for_speed(in)) return false;
  if (in.gpu_slowdown.empty()) return true;
  const PlanShape p = shape_of(in);
  for (std::size_t s = 0; s < p.pp; ++s) {
    const double first = unit_slowdown(in, p, s, 0);
    for (std::size_t r = 1; r < p.dp; ++r) {
      if (unit_slowdown(in, p, s, r) != first) return false;
    }
  }
  return true;
}

std::vector<double> slowest_replica_slowdowns(const IterationInputs& in) {
  if (in.gpu_slowdown.empty()) return {};
  const PlanShape p = shape_of(in);
  std::size_t slowest = 0;
  std::tuple<double, double> slowest_key{0, 0};  // (largest unit slowdown, sum over stages)
  for (std::size_t r = 0; r < p.dp; ++r) {
    std::tuple<double, double> key{0, 0};
    for (std::size_t s = 0; s < p.pp; ++s) {
      const double f = unit_slowdown(in, p, s, r);
      key = {std::max(std::get<0>(key), f), std::get<1>(key) + f};
    }
    if (key > slowest_key) {
      slowest = r;
      slowest_key = key;
    }
  }
  std::vector<double> out = in.gpu_slowdown;
  for (std::size_t s = 0; s < p.pp; ++s) {
    const double f = unit_slowdown(in, p, s, slowest);
    for (std::size_t r = 0; r < p.dp; ++r) {
      for (const topo::GpuId g : unit_gpus(in, p, s, r)) out[g.index()] = f;
    }
  }
  return out;
}

}  // namespace megasim::backend
