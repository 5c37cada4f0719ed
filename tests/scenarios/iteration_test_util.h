// Hand-made workloads and traces for the report and Perfetto tests: a few tasks per stage, times in
// milliseconds, so every expectation can be derived on paper.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/trace.h"
#include "models/workload.h"
#include "sim/time.h"

namespace megasim::scenarios::testing {

// The cluster and model of the small simulated scenarios: a 4-layer GPT (16 heads) on one server
// of 8 A100s; tests append their [plan] section.
inline constexpr const char* kSmallGptOnOneServer = R"([cluster]
gpu = "A100"
gpus = 8
[model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
)";

// A TP 2 x PP 2 plan of that model (DP 2 on its 8 GPUs), with compute jitter so that ranks differ:
// the recorded iteration of the trace-reading tests.
inline constexpr const char* kTpPpDpWithJitter = R"([plan]
tensor_model_parallel_size = 2
pipeline_model_parallel_size = 2
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 8
[stragglers]
jitter_cv = 0.05
)";

// The trace as a real backend writes it (measured_trace.h): one unit per rank, each with its
// unit's records.
inline backend::Trace per_rank(const backend::Trace& trace) {
  backend::Trace out = trace;
  out.units.clear();
  for (const backend::TraceUnit& unit : trace.units) {
    for (const std::int64_t rank : unit.ranks) {
      backend::TraceUnit one = unit;
      one.ranks = {rank};
      out.units.push_back(one);
    }
  }
  return out;
}

inline sim::SimTime ms(double milliseconds) {
  return sim::from_seconds(milliseconds / 1e3);
}

inline models::Task compute(models::TaskCategory category, std::int32_t microbatch,
                            std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.category = category;
  t.microbatch = microbatch;
  const bool pass = category == models::TaskCategory::kForward || category == models::TaskCategory::kBackward;
  t.chunk = pass ? 0 : -1;
  t.deps = std::move(deps);
  return t;
}

// PP send/recv of micro-batch `microbatch`, chunk 0; category kPipelineForward or kPipelineBackward.
inline models::Task p2p(models::TaskKind kind, models::TaskCategory category, std::int32_t microbatch,
                        std::int32_t peer_offset, std::int64_t tag, std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.kind = kind;
  t.stream = models::StreamKind::kPp;
  t.category = category;
  t.microbatch = microbatch;
  t.chunk = 0;
  t.peer_offset = peer_offset;
  t.tag = tag;
  t.bytes = 1e6;
  t.deps = std::move(deps);
  return t;
}

inline models::Task dp_call(models::CollectiveOp op, std::vector<std::int32_t> deps = {}) {
  models::Task t;
  t.kind = models::TaskKind::kDpCollective;
  t.stream = models::StreamKind::kDp;
  t.category = op == models::CollectiveOp::kAllGather ? models::TaskCategory::kParameterGather
                                                      : models::TaskCategory::kGradientReduce;
  t.op = op;
  t.bytes = 1e8;
  t.deps = std::move(deps);
  return t;
}

// A record in milliseconds; transfer_ms < 0 means "= start" (compute, or a transfer that began when
// it was posted).
struct Rec {
  double start_ms = 0;
  double end_ms = 0;
  double transfer_ms = -1;
  double tp_exposed_ms = 0;
};

inline backend::TraceUnit unit(std::int32_t stage, std::int32_t replica, std::vector<std::int64_t> ranks,
                               const std::vector<Rec>& records) {
  backend::TraceUnit u;
  u.stage = stage;
  u.replica = replica;
  u.ranks = std::move(ranks);
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Rec& r = records[i];
    backend::TaskRecord record;
    record.start = ms(r.start_ms);
    record.transfer_start = ms(r.transfer_ms < 0 ? r.start_ms : r.transfer_ms);
    record.end = ms(r.end_ms);
    record.tp_exposed = ms(r.tp_exposed_ms);
    u.records.push_back(record);
  }
  return u;
}

// A workload with the given sizes and stage programs: one micro-batch of one 2,048-token sample per
// replica and micro-batch index (global batch = num_microbatches * dp).
inline models::Workload workload(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t num_microbatches,
                                 std::vector<models::StageProgram> stages) {
  models::Workload w;
  w.model.seq_length = 2048;
  w.plan.tp = tp;
  w.plan.pp = pp;
  w.plan.dp = dp;
  w.plan.world_size = tp * pp * dp;
  w.plan.num_microbatches = num_microbatches;
  w.plan.plan.micro_batch_size = 1;
  w.plan.plan.global_batch_size = num_microbatches * dp;
  w.plan.plan.tensor_model_parallel_size = tp;
  w.plan.plan.pipeline_model_parallel_size = pp;
  w.stages = std::move(stages);
  return w;
}

// PP 2, one micro-batch, tasks in this order: stage 0 F, send fwd, recv bwd, B; stage 1 recv fwd, F,
// B, send bwd (tags 0 forward, 1 backward).
inline models::Workload two_stage_pipeline() {
  using models::TaskCategory;
  using models::TaskKind;
  models::StageProgram s0;
  s0.tasks = {compute(TaskCategory::kForward, 0), p2p(TaskKind::kPpSend, TaskCategory::kPipelineForward, 0, 1, 0, {0}),
              p2p(TaskKind::kPpRecv, TaskCategory::kPipelineBackward, 0, 1, 1),
              compute(TaskCategory::kBackward, 0, {2})};
  models::StageProgram s1;
  s1.tasks = {p2p(TaskKind::kPpRecv, TaskCategory::kPipelineForward, 0, -1, 0), compute(TaskCategory::kForward, 0, {0}),
              compute(TaskCategory::kBackward, 0, {1}),
              p2p(TaskKind::kPpSend, TaskCategory::kPipelineBackward, 0, -1, 1, {2})};
  return workload(1, 2, 1, 1, {s0, s1});
}

inline backend::Trace trace(std::vector<backend::TraceUnit> units, double iteration_ms) {
  backend::Trace t;
  t.backend = "test";
  t.iteration_time = ms(iteration_ms);
  t.units = std::move(units);
  return t;
}

// Brackets and braces outside strings balance: a cheap structural check of written JSON.
inline bool balanced_json(const std::string& json) {
  std::vector<char> stack;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' || c == '[') stack.push_back(c);
    if (c == '}' || c == ']') {
      if (stack.empty() || stack.back() != (c == '}' ? '{' : '[')) return false;
      stack.pop_back();
    }
  }
  return stack.empty() && !in_string;
}

}  // namespace megasim::scenarios::testing
