#include "backend/cuda/shard_runner.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/op_runner.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

// Per task, the index of its start event in Events (1, 3, 5, ...), or -1 for a task without ops.
std::vector<std::int32_t> start_events(const models::Workload& w, const models::StageProgram& program) {
  std::vector<std::int32_t> start(program.tasks.size(), -1);
  std::int32_t next = 1;
  for (std::size_t i = 0; i < program.tasks.size(); ++i) {
    if (!has_ops(w, program.tasks[i])) continue;
    start[i] = next;
    next += 2;
  }
  return start;
}

std::size_t event_count(const std::vector<std::int32_t>& start_event) {
  const auto tasks = std::count_if(start_event.begin(), start_event.end(), [](std::int32_t e) { return e >= 0; });
  return 1 + 2 * static_cast<std::size_t>(tasks);
}

// The user's error for a shard whose buffers do not fit: the bytes needed and those free.
sim::ConfigError out_of_memory(const models::Workload& w, std::int64_t stage, std::size_t needed,
                               const DeviceMemoryError& error) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const bool known = cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess;
  cudaGetLastError();
  return sim::ConfigError(
      "plan.tensor_model_parallel_size", std::to_string(w.plan.tp),
      "a plan whose stage " + std::to_string(stage) + " shard fits one GPU: its largest ops need " +
          std::to_string(needed) + " bytes of device memory in shard mode (" + error.what() + "; " +
          (known ? std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free"
                 : std::string("free memory unknown")) +
          "); a larger tensor or pipeline parallel size or a smaller micro_batch_size shrinks them");
}

}  // namespace

struct ShardRunner::Impl {
  Impl(const models::Workload& w, std::int64_t stage);

  // Enqueues one iteration: an event, then each compute task's ops between its two events.
  void play();
  // Waits for the iteration enqueued last.
  void wait() { check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize"); }
  // Waits for the iteration and reads its events.
  std::vector<TaskRecord> records();

  const models::Workload& workload;
  const models::StageProgram& program;
  std::vector<std::int32_t> start_event;  // per task: its start event (its end is the next), -1: none
  Stream stream;
  OpRunner ops;
  Events events;  // [0]: the iteration's start, then a start and an end per compute task with ops
};

ShardRunner::Impl::Impl(const models::Workload& w, std::int64_t stage)
    : workload(w),
      program(w.stages[static_cast<std::size_t>(stage)]),
      start_event(start_events(w, program)),
      ops(w, program),
      events(event_count(start_event)) {}

void ShardRunner::Impl::play() {
  check(cudaEventRecord(events[0], stream.get()), "cudaEventRecord");
  for (std::size_t t = 0; t < program.tasks.size(); ++t) {
    if (start_event[t] < 0) continue;
    const auto first = static_cast<std::size_t>(start_event[t]);
    check(cudaEventRecord(events[first], stream.get()), "cudaEventRecord");
    for (const models::Task::KernelRun& run : program.tasks[t].runs) {
      const models::KernelList& list = workload.kernels.at(static_cast<std::size_t>(run.kernels));
      for (std::int32_t r = 0; r < run.repeat; ++r) {
        for (const models::LayerOp& op : list.ops) ops.run(op, stream.get());
      }
    }
    check(cudaEventRecord(events[first + 1], stream.get()), "cudaEventRecord");
  }
}

std::vector<TaskRecord> ShardRunner::Impl::records() {
  wait();
  std::vector<TaskRecord> out(program.tasks.size());
  sim::SimTime last_end = 0;  // of the latest compute task with ops
  for (std::size_t t = 0; t < out.size(); ++t) {
    TaskRecord& record = out[t];
    if (start_event[t] < 0) {
      record.start = record.transfer_start = record.end = last_end;
      continue;
    }
    const auto first = static_cast<std::size_t>(start_event[t]);
    record.start = record.transfer_start = elapsed_ns(events[0], events[first]);
    record.end = last_end = elapsed_ns(events[0], events[first + 1]);
  }
  return out;
}

ShardRunner::ShardRunner(const models::Workload& workload, std::int64_t stage) : stage_(stage) {
  const auto stages = static_cast<std::int64_t>(workload.stages.size());
  if (stage < 0 || stage >= stages) {
    throw sim::ConfigError("--stage", std::to_string(stage),
                           "a pipeline stage of the plan, 0 to " + std::to_string(stages - 1));
  }
  rank_ = workload.plan.layout().rank_of(0, 0, stage);
  device_bytes_ = OpRunner::device_bytes_for(workload, workload.stages[static_cast<std::size_t>(stage)]);
  try {
    impl_ = std::make_unique<Impl>(workload, stage);
  } catch (const DeviceMemoryError& error) {
    throw out_of_memory(workload, stage, device_bytes_, error);
  }
}

ShardRunner::~ShardRunner() = default;

std::vector<Trace> ShardRunner::run(int warmup_iterations, int iterations) {
  if (warmup_iterations < 0 || iterations < 1) {
    throw sim::ConfigError("--iterations", std::to_string(iterations), "at least 1 (and warm-up >= 0)");
  }
  for (int i = 0; i < warmup_iterations; ++i) {
    impl_->play();
    impl_->wait();
  }
  std::vector<Trace> traces;
  for (int i = 0; i < iterations; ++i) {
    impl_->play();
    Trace trace;
    trace.backend = "cuda";
    TraceUnit unit;
    unit.ranks = {rank_};
    unit.stage = static_cast<std::int32_t>(stage_);
    unit.replica = 0;
    unit.records = impl_->records();
    for (const TaskRecord& record : unit.records) trace.iteration_time = std::max(trace.iteration_time, record.end);
    trace.units.push_back(std::move(unit));
    traces.push_back(std::move(trace));
  }
  return traces;
}

}  // namespace megasim::backend::cuda
