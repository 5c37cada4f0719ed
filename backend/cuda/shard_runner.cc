#include "backend/cuda/shard_runner.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/gemm_runner.h"
#include "backend/cuda/streaming_kernel.h"
#include "models/compute_cost.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

using models::LayerOp;
using models::OpKind;

bool is_gemm(OpKind kind) {
  return kind == OpKind::kGemm || kind == OpKind::kAttention;
}

// A GEMM with a zero dimension does no work (and cuBLASLt takes none).
bool does_work(const models::GemmShape& s) {
  return s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0;
}

GemmProblem problem_of(const models::GemmShape& s) {
  return {s.m, s.n, s.k, s.batch};
}

// Batched GEMMs one run of `op` launches: FlashAttention's executed FLOPs as whole products of its
// Q·Kᵀ shape (as the cpu backend counts them), else one.
std::int64_t gemm_count(const LayerOp& op, bool flash_attention) {
  if (op.kind != OpKind::kAttention || !flash_attention) return 1;
  const double product_flops = models::gemm_flops(op.shape);
  return product_flops > 0 ? std::max<std::int64_t>(1, std::llround(op.executed_flops / product_flops)) : 1;
}

const models::KernelList& list_of(const models::Workload& w, const models::Task::KernelRun& run) {
  return w.kernels.at(static_cast<std::size_t>(run.kernels));
}

// Whether the task launches anything in shard mode.
bool has_ops(const models::Workload& w, const models::Task& task) {
  if (task.kind != models::TaskKind::kCompute) return false;
  return std::any_of(task.runs.begin(), task.runs.end(), [&](const models::Task::KernelRun& run) {
    return run.repeat > 0 && !list_of(w, run).ops.empty();
  });
}

// What the stage's buffers must hold: every GEMM shape, and the largest memory-bound op.
struct StageOps {
  std::vector<GemmProblem> gemms;
  double max_stream_bytes = 0;
};

StageOps stage_ops(const models::Workload& w, const models::StageProgram& program) {
  std::vector<bool> seen(w.kernels.size(), false);
  StageOps ops;
  for (const models::Task& task : program.tasks) {
    if (task.kind != models::TaskKind::kCompute) continue;
    for (const models::Task::KernelRun& run : task.runs) {
      const auto index = static_cast<std::size_t>(run.kernels);
      if (seen.at(index)) continue;
      seen[index] = true;
      for (const LayerOp& op : w.kernels[index].ops) {
        if (!is_gemm(op.kind)) {
          ops.max_stream_bytes = std::max(ops.max_stream_bytes, op.bytes);
        } else if (does_work(op.shape)) {
          ops.gemms.push_back(problem_of(op.shape));
        }
      }
    }
  }
  return ops;
}

class Stream {
 public:
  Stream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate"); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Timing events, created once and recorded again every iteration.
class Events {
 public:
  explicit Events(std::size_t count) {
    events_.reserve(count);
    try {
      for (std::size_t i = 0; i < count; ++i) {
        cudaEvent_t event = nullptr;
        check(cudaEventCreate(&event), "cudaEventCreate");
        events_.push_back(event);
      }
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Events() { destroy(); }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  [[nodiscard]] cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  void destroy() {
    for (cudaEvent_t event : events_) cudaEventDestroy(event);
    events_.clear();
  }
  std::vector<cudaEvent_t> events_;
};

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

// Nanoseconds from `from` to `to`, both complete.
sim::SimTime elapsed_ns(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, from, to), "cudaEventElapsedTime");
  return std::llround(static_cast<double>(ms) * 1e6);
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
  Impl(const models::Workload& w, std::int64_t stage, const StageOps& ops);

  // Enqueues one iteration: an event, then each compute task's ops between its two events.
  void play();
  void run_op(const LayerOp& op);
  // Waits for the iteration enqueued last.
  void wait() { check(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize"); }
  // Waits for the iteration and reads its events.
  std::vector<TaskRecord> records();

  const models::Workload& workload;
  const models::StageProgram& program;
  bool flash_attention = false;
  std::vector<std::int32_t> start_event;  // per task: its start event (its end is the next), -1: none
  Stream stream;
  GemmRunner gemms;
  StreamingKernel streaming;
  Events events;  // [0]: the iteration's start, then a start and an end per compute task with ops
};

ShardRunner::Impl::Impl(const models::Workload& w, std::int64_t stage, const StageOps& ops)
    : workload(w),
      program(w.stages[static_cast<std::size_t>(stage)]),
      flash_attention(w.plan.plan.use_flash_attention),
      start_event(start_events(w, program)),
      gemms(ops.gemms),
      streaming(ops.max_stream_bytes),
      events(event_count(start_event)) {}

void ShardRunner::Impl::run_op(const LayerOp& op) {
  if (!is_gemm(op.kind)) {
    streaming.run(op.bytes, stream.get());
    return;
  }
  if (!does_work(op.shape)) return;
  const GemmProblem problem = problem_of(op.shape);
  const std::int64_t count = gemm_count(op, flash_attention);
  for (std::int64_t i = 0; i < count; ++i) gemms.run(problem, stream.get());
}

void ShardRunner::Impl::play() {
  check(cudaEventRecord(events[0], stream.get()), "cudaEventRecord");
  for (std::size_t t = 0; t < program.tasks.size(); ++t) {
    if (start_event[t] < 0) continue;
    const auto first = static_cast<std::size_t>(start_event[t]);
    check(cudaEventRecord(events[first], stream.get()), "cudaEventRecord");
    for (const models::Task::KernelRun& run : program.tasks[t].runs) {
      const models::KernelList& list = list_of(workload, run);
      for (std::int32_t r = 0; r < run.repeat; ++r) {
        for (const LayerOp& op : list.ops) run_op(op);
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
  const StageOps ops = stage_ops(workload, workload.stages[static_cast<std::size_t>(stage)]);
  device_bytes_ = GemmRunner::arena_bytes_for(ops.gemms) + GemmRunner::kWorkspaceBytes +
                  StreamingKernel::device_bytes_for(ops.max_stream_bytes);
  try {
    impl_ = std::make_unique<Impl>(workload, stage, ops);
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
