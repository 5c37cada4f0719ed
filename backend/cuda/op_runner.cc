#include "backend/cuda/op_runner.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "backend/cuda/flash_attention.h"
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

// The fused kernel's problem for a FlashAttention op of layer_ops.h (shape: m = sequence, k = head
// dimension, batch = micro-batch x heads on this GPU; causal, with the plan's sliding window), when
// the kernels support its head dimension.
std::optional<FlashAttentionProblem> flash_problem(const LayerOp& op, const models::ResolvedPlan& plan) {
  if (op.kind != OpKind::kAttention || !models::uses_flash_kernel(plan.plan)) return std::nullopt;
  if (op.shape.k != 64 && op.shape.k != 128) return std::nullopt;
  FlashAttentionProblem problem;
  problem.batch_heads = op.shape.batch;
  problem.seq = op.shape.m;
  problem.head_dim = op.shape.k;
  problem.causal = true;
  problem.window = plan.plan.sliding_window_size;
  return problem;
}

// layer_ops.h names FlashAttention's backward op "flash_attention_bwd" ("flash_attention_1_bwd").
bool is_backward(const LayerOp& op) {
  return op.name.size() >= 4 && op.name.compare(op.name.size() - 4, 4, "_bwd") == 0;
}

// What the stage's buffers must hold: every GEMM shape, every fused attention problem, and the
// largest memory-bound op.
struct StageOps {
  std::vector<GemmProblem> gemms;
  std::vector<FlashAttentionProblem> attention;
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
        } else if (const std::optional<FlashAttentionProblem> fused = flash_problem(op, w.plan)) {
          ops.attention.push_back(*fused);
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
         StreamingKernel::device_bytes_for(ops.max_stream_bytes) +
         (ops.attention.empty() ? 0 : FlashAttentionRunner::arena_bytes_for(ops.attention));
}

}  // namespace

struct OpRunner::State {
  State(const models::ResolvedPlan& p, const StageOps& ops)
      : plan(p), gemms(ops.gemms), streaming(ops.max_stream_bytes), attention(ops.attention) {}
  const models::ResolvedPlan& plan;
  GemmRunner gemms;
  StreamingKernel streaming;
  FlashAttentionRunner attention;
};

OpRunner::OpRunner(const models::Workload& workload, const models::StageProgram& program) {
  const StageOps ops = stage_ops(workload, program);
  device_bytes_ = bytes_for(ops);
  state_ = std::make_unique<State>(workload.plan, ops);
}

OpRunner::~OpRunner() = default;

void OpRunner::run(const LayerOp& op, CUstream_st* stream) {
  if (!is_gemm(op.kind)) {
    state_->streaming.run(op.bytes, stream);
    return;
  }
  if (const std::optional<FlashAttentionProblem> fused = flash_problem(op, state_->plan)) {
    if (is_backward(op)) {
      state_->attention.backward(*fused, stream);
    } else {
      state_->attention.forward(*fused, stream);
    }
    return;
  }
  if (!does_work(op.shape)) return;
  const GemmProblem problem = problem_of(op.shape);
  const std::int64_t count = gemm_count(op, models::uses_flash_kernel(state_->plan.plan));
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
