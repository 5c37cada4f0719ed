#include "backend/cuda/op_runner.h"

#include <algorithm>
#include <cmath>

#include "backend/cuda/gemm_runner.h"
#include "backend/cuda/streaming_kernel.h"
#include "models/compute_cost.h"

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

std::size_t bytes_for(const StageOps& ops) {
  return GemmRunner::arena_bytes_for(ops.gemms) + GemmRunner::kWorkspaceBytes +
         StreamingKernel::device_bytes_for(ops.max_stream_bytes);
}

}  // namespace

struct OpRunner::State {
  State(bool flash, const StageOps& ops) : flash_attention(flash), gemms(ops.gemms), streaming(ops.max_stream_bytes) {}
  bool flash_attention = false;
  GemmRunner gemms;
  StreamingKernel streaming;
};

OpRunner::OpRunner(const models::Workload& workload, const models::StageProgram& program) {
  const StageOps ops = stage_ops(workload, program);
  device_bytes_ = bytes_for(ops);
  state_ = std::make_unique<State>(workload.plan.plan.use_flash_attention, ops);
}

OpRunner::~OpRunner() = default;

void OpRunner::run(const LayerOp& op, CUstream_st* stream) {
  if (!is_gemm(op.kind)) {
    state_->streaming.run(op.bytes, stream);
    return;
  }
  if (!does_work(op.shape)) return;
  const GemmProblem problem = problem_of(op.shape);
  const std::int64_t count = gemm_count(op, state_->flash_attention);
  for (std::int64_t i = 0; i < count; ++i) state_->gemms.run(problem, stream);
}

std::size_t OpRunner::device_bytes_for(const models::Workload& workload, const models::StageProgram& program) {
  return bytes_for(stage_ops(workload, program));
}

bool has_ops(const models::Workload& workload, const models::Task& task) {
  if (task.kind != models::TaskKind::kCompute) return false;
  return std::any_of(task.runs.begin(), task.runs.end(), [&](const models::Task::KernelRun& run) {
    return run.repeat > 0 && !workload.kernels.at(static_cast<std::size_t>(run.kernels)).ops.empty();
  });
}

}  // namespace megasim::backend::cuda
