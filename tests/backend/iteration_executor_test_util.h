// Hand-built workloads for the iteration executor tests, following models/workload.h's semantics,
// so every expected time can be derived from the task list and the kernel times given here.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/sim/iteration_executor.h"
#include "models/pipeline_schedule.h"
#include "models/workload.h"
#include "topology/topology.h"

namespace megasim::backend::testing {

inline constexpr double kMs = 1e-3;

// A workload with the resolved sizes filled in and no stage programs yet.
inline models::Workload empty_workload(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t v = 1,
                                       std::int64_t m = 1) {
  models::Workload w;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  w.plan.virtual_stages = v;
  w.plan.num_microbatches = m;
  w.plan.world_size = tp * pp * dp;
  w.plan.plan.tensor_model_parallel_size = tp;
  w.plan.plan.pipeline_model_parallel_size = pp;
  w.stages.resize(static_cast<std::size_t>(pp));
  return w;
}

inline std::int32_t add_task(models::StageProgram& program, models::Task task) {
  program.tasks.push_back(std::move(task));
  return static_cast<std::int32_t>(program.tasks.size() - 1);
}

inline models::Task compute_task(std::int32_t kernels, std::int32_t repeat = 1, std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.kind = models::TaskKind::kCompute;
  t.stream = models::StreamKind::kCompute;
  t.runs.push_back({kernels, repeat});
  t.deps = std::move(deps);
  return t;
}

inline models::Task p2p_task(models::TaskKind kind, std::int32_t peer_offset, std::int64_t tag, double bytes,
                             std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.kind = kind;
  t.stream = models::StreamKind::kPp;
  t.category = peer_offset > 0 ? models::TaskCategory::kPipelineForward : models::TaskCategory::kPipelineBackward;
  t.peer_offset = peer_offset;
  t.tag = tag;
  t.bytes = bytes;
  t.deps = std::move(deps);
  return t;
}

inline models::Task dp_task(models::CollectiveOp op, double bytes, std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.kind = models::TaskKind::kDpCollective;
  t.stream = models::StreamKind::kDp;
  t.category = models::TaskCategory::kGradientReduce;
  t.op = op;
  t.bytes = bytes;
  t.deps = std::move(deps);
  return t;
}

struct PipelineOptions {
  double pp_bytes = 1;               // per transfer and TP rank
  bool send_blocks_compute = false;  // Megatron without overlap_p2p_comm
  std::int32_t dp_buckets = 0;       // DP reduce-scatters after the last backward
  double dp_bucket_bytes = 0;
};

// Stage programs from models::pipeline_schedule: kernel list 0 is a chunk's forward, 1 its backward.
// Each step of virtual stage k (of K = pp*v) receives its input from k-1 (forward) or k+1 (backward)
// first, computes, then sends to k+1 (forward) or k-1 (backward). Tags: 2*(mb*K + k) for the
// activations entering k, that + 1 for the gradients entering k. Optional DP buckets follow the last
// step.
inline void add_pipeline_programs(models::Workload& w, const PipelineOptions& o) {
  const std::int64_t pp = w.plan.pp, v = w.plan.virtual_stages, m = w.plan.num_microbatches, stages = pp * v;
  for (std::int64_t r = 0; r < pp; ++r) {
    models::StageProgram& program = w.stages[static_cast<std::size_t>(r)];
    std::int32_t last_send = -1, last_compute = -1;
    for (const models::ScheduleStep& step : models::pipeline_schedule(r, pp, m, v)) {
      const std::int64_t k = models::virtual_stage_of(r, step.chunk, pp);
      const bool fwd = step.pass == models::PassKind::kForward;
      const std::int64_t base = 2 * (step.microbatch * stages);
      std::vector<std::int32_t> deps;
      if (fwd ? k > 0 : k + 1 < stages) {
        deps.push_back(add_task(
            program, p2p_task(models::TaskKind::kPpRecv, fwd ? -1 : +1, base + 2 * k + (fwd ? 0 : 1), o.pp_bytes)));
      }
      if (o.send_blocks_compute && last_send >= 0) deps.push_back(last_send);
      models::Task c = compute_task(fwd ? 0 : 1, 1, deps);
      c.category = fwd ? models::TaskCategory::kForward : models::TaskCategory::kBackward;
      c.microbatch = step.microbatch;
      c.chunk = step.chunk;
      last_compute = add_task(program, std::move(c));
      if (fwd ? k + 1 < stages : k > 0) {
        const std::int64_t to = fwd ? k + 1 : k - 1;
        last_send = add_task(program, p2p_task(models::TaskKind::kPpSend, fwd ? +1 : -1, base + 2 * to + (fwd ? 0 : 1),
                                               o.pp_bytes, {last_compute}));
      }
    }
    for (std::int32_t b = 0; b < o.dp_buckets; ++b) {
      add_task(program, dp_task(models::CollectiveOp::kReduceScatter, o.dp_bucket_bytes, {last_compute}));
    }
  }
  w.kernels.resize(2);
  w.kernels[0].name = "chunk forward";
  w.kernels[1].name = "chunk backward";
}

// Inputs with the default fabric and collective parameters and the given kernel times.
inline IterationInputs make_inputs(const models::Workload& w, const topo::Topology& topo, topo::Placement placement,
                                   std::vector<KernelTime> kernel_times) {
  IterationInputs in;
  in.workload = &w;
  in.topology = &topo;
  in.placement = std::move(placement);
  in.kernel_times = std::move(kernel_times);
  return in;
}

inline topo::Placement placement_of(const std::vector<std::int32_t>& gpus) {
  topo::Placement p;
  for (const std::int32_t g : gpus) p.emplace_back(g);
  return p;
}

inline topo::Placement first_gpus(std::int64_t n) {
  topo::Placement p;
  for (std::int64_t g = 0; g < n; ++g) p.emplace_back(static_cast<std::int32_t>(g));
  return p;
}

// Records of the unit of (stage, replica) in a trace whose units are ordered replica + dp * stage.
inline const TraceUnit& unit_at(const Trace& trace, std::int64_t dp, std::int64_t stage, std::int64_t replica) {
  return trace.units.at(static_cast<std::size_t>(replica + dp * stage));
}

}  // namespace megasim::backend::testing
