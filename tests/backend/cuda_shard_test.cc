// The cuda backend's shard mode (shard_runner.h) and its pieces. Sizes and invalid input are checked
// everywhere; the runs need a GPU and skip where none is visible: the trace follows the stage
// program, times respect the GPU's peak and grow with the work.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cuda/device_info.h"
#include "backend/cuda/gemm_runner.h"
#include "backend/cuda/shard_runner.h"
#include "backend/cuda/streaming_kernel.h"
#include "backend/trace.h"
#include "models/gpu_spec.h"
#include "models/layer_ops.h"
#include "models/plan.h"
#include "models/workload.h"
#include "sim/error.h"

namespace megasim::backend::cuda {
namespace {

// A small GPT of build_workload: 2 layers, head dimension 64, vocabulary 1024, TP 1 and PP 2 over
// the 2 GPUs of one server, 4 micro-batches of 1.
models::Workload small_gpt(std::int64_t hidden, std::int64_t seq, bool flash_attention = false) {
  models::ModelSpec model;
  model.num_layers = 2;
  model.hidden_size = hidden;
  model.num_attention_heads = hidden / 64;
  model.seq_length = seq;
  model.vocab_size = 1024;
  models::ParallelPlan plan;
  plan.tensor_model_parallel_size = 1;
  plan.pipeline_model_parallel_size = 2;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 4;
  plan.use_flash_attention = flash_attention;
  return models::build_workload(model, models::resolve_plan(model, plan, 2, 2));
}

models::Workload tiny_gpt(bool flash_attention = false) {
  return small_gpt(256, 128, flash_attention);
}

// Whether shard mode launches anything for the task (compute with at least one op).
bool has_ops(const models::Workload& w, const models::Task& task) {
  if (task.kind != models::TaskKind::kCompute) return false;
  for (const models::Task::KernelRun& run : task.runs) {
    if (run.repeat > 0 && !w.kernels[static_cast<std::size_t>(run.kernels)].ops.empty()) return true;
  }
  return false;
}

double executed_flops(const models::Workload& w, const models::Task& task) {
  double flops = 0;
  for (const models::Task::KernelRun& run : task.runs) {
    flops += run.repeat * models::sum_executed_flops(w.kernels[static_cast<std::size_t>(run.kernels)].ops);
  }
  return flops;
}

// Seconds the stage's forward and backward tasks took in `trace`.
double forward_backward_s(const models::Workload& w, std::int64_t stage, const Trace& trace) {
  const auto& tasks = w.stages[static_cast<std::size_t>(stage)].tasks;
  sim::SimTime ns = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const models::TaskCategory c = tasks[i].category;
    if (c != models::TaskCategory::kForward && c != models::TaskCategory::kBackward) continue;
    ns += trace.units.at(0).records.at(i).end - trace.units.at(0).records.at(i).start;
  }
  return static_cast<double>(ns) * 1e-9;
}

// Checks the trace against the stage program: compute tasks with ops take time, in program order
// without overlap; every other task is zero-length at the end of the compute before it.
void expect_follows_program(const models::Workload& w, std::int64_t stage, const Trace& trace) {
  EXPECT_EQ(trace.backend, "cuda");
  ASSERT_EQ(trace.units.size(), 1u);
  const TraceUnit& unit = trace.units[0];
  EXPECT_EQ(unit.ranks, std::vector<std::int64_t>{stage * w.plan.tp * w.plan.dp});
  EXPECT_EQ(unit.stage, stage);
  EXPECT_EQ(unit.replica, 0);
  const auto& tasks = w.stages[static_cast<std::size_t>(stage)].tasks;
  ASSERT_EQ(unit.records.size(), tasks.size());
  sim::SimTime last_end = 0;
  sim::SimTime latest = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const TaskRecord& r = unit.records[i];
    EXPECT_EQ(r.transfer_start, r.start) << "task " << i;
    EXPECT_EQ(r.tp_exposed, 0) << "task " << i;
    if (has_ops(w, tasks[i])) {
      EXPECT_GT(r.end, r.start) << "task " << i;
      EXPECT_GE(r.start, last_end) << "task " << i << " overlaps the compute before it";
      last_end = r.end;
    } else {
      EXPECT_EQ(r.start, last_end) << "task " << i;
      EXPECT_EQ(r.end, last_end) << "task " << i;
    }
    latest = std::max(latest, r.end);
  }
  EXPECT_EQ(trace.iteration_time, latest);
  EXPECT_EQ(trace.iteration_time, last_end);
}

bool gpu_visible() {
  return !visible_gpus().empty();
}

// The gpus.csv entry of the first visible GPU, or nullptr.
const models::GpuSpec* first_gpu_spec() {
  const std::vector<GpuInfo> gpus = visible_gpus();
  return gpus.empty() ? nullptr : models::gpu_for_device_name(gpus.front().name);
}

TEST(GemmRunnerSizes, ArenaHoldsTheLargestOfEachOperand) {
  // A: k*n*batch = max(128, 24); B: k*m*batch = max(64, 384); D: n*m*batch = max(32, 192) bf16
  // values, each region rounded up to 256 bytes.
  const std::vector<GemmProblem> problems{{4, 8, 16, 1}, {32, 2, 4, 3}};
  EXPECT_EQ(GemmRunner::arena_bytes_for(problems), 256u + 768u + 512u);
  EXPECT_EQ(GemmRunner::arena_bytes_for({}), 0u);
}

TEST(GemmRunnerSizes, AnEmptyOrNegativeDimensionIsRefused) {
  EXPECT_THROW(validate(GemmProblem{0, 8, 8, 1}), CudaError);
  EXPECT_THROW(validate(GemmProblem{8, 8, -1, 1}), CudaError);
  EXPECT_THROW(validate(GemmProblem{8, 8, 8, 0}), CudaError);
  EXPECT_THROW(validate(GemmProblem{8, 8, 8, std::int64_t{1} << 31}), CudaError);
  EXPECT_NO_THROW(validate(GemmProblem{1, 1, 1, 1}));
  EXPECT_THROW(static_cast<void>(GemmRunner::arena_bytes_for({{8, 0, 8, 1}})), CudaError);
}

// cuBLASLt's FP8 GEMMs need every side a multiple of 16; bf16 ones do not.
TEST(GemmRunnerSizes, Fp8ProblemsNeedSidesThatAreMultiplesOf16) {
  constexpr GemmOperands kFp8 = GemmOperands::kFp8E4m3;
  EXPECT_NO_THROW(validate(GemmProblem{16, 32, 48, 2, kFp8}));
  EXPECT_THROW(validate(GemmProblem{8, 32, 48, 1, kFp8}), CudaError);
  EXPECT_THROW(validate(GemmProblem{16, 24, 48, 1, kFp8}), CudaError);
  EXPECT_THROW(validate(GemmProblem{16, 32, 40, 1, kFp8}), CudaError);
  EXPECT_NO_THROW(validate(GemmProblem{8, 24, 40, 1}));
  EXPECT_EQ(operand_bytes(kFp8), 1u);
  EXPECT_EQ(operand_bytes(GemmOperands::kBf16), 2u);
}

TEST(StreamingKernelSizes, MovesTheOpsBytesInBf16) {
  EXPECT_EQ(StreamingKernel::elements_for(0), 1u);
  EXPECT_EQ(StreamingKernel::elements_for(4), 1u);
  EXPECT_EQ(StreamingKernel::elements_for(4003), 1000u);
  // x and y, each rounded up to whole 16-byte vectors.
  EXPECT_EQ(StreamingKernel::device_bytes_for(4000), 4000u);
  EXPECT_EQ(StreamingKernel::device_bytes_for(36), 2u * 16u * 2u);
}

TEST(ShardRunner, AStageOutsideThePipelineIsAConfigError) {
  const models::Workload w = tiny_gpt();
  for (const std::int64_t stage : {std::int64_t{-1}, std::int64_t{2}}) {
    try {
      ShardRunner runner(w, stage);
      ADD_FAILURE() << "stage " << stage << " accepted";
    } catch (const sim::ConfigError& e) {
      EXPECT_EQ(e.key(), "--stage");
      EXPECT_EQ(e.value(), std::to_string(stage));
    }
  }
}

TEST(ShardRunner, EveryStageFollowsItsProgram) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  const models::Workload w = tiny_gpt();
  for (std::int64_t stage = 0; stage < 2; ++stage) {
    ShardRunner runner(w, stage);
    EXPECT_EQ(runner.rank(), stage);
    EXPECT_GT(runner.device_bytes(), GemmRunner::kWorkspaceBytes);
    const std::vector<Trace> traces = runner.run(1, 2);
    ASSERT_EQ(traces.size(), 2u);
    for (const Trace& trace : traces) expect_follows_program(w, stage, trace);
  }
}

TEST(ShardRunner, FlashAttentionRunsTheFusedKernels) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  const models::Workload w = tiny_gpt(true);
  ShardRunner runner(w, 0);
  const std::vector<Trace> traces = runner.run(0, 1);
  ASSERT_EQ(traces.size(), 1u);
  expect_follows_program(w, 0, traces[0]);
}

TEST(ShardRunner, ComputeIsBelowPeakAndGrowsWithTheWork) {
  const models::GpuSpec* spec = first_gpu_spec();
  if (spec == nullptr) GTEST_SKIP() << "no visible GPU of a family in gpus.csv";
  const double peak = spec->peak_bf16_dense_tflops * 1e12;
  // Doubling the hidden size quadruples the linear layers' FLOPs and doubles attention's and the
  // memory-bound ops' bytes: the forward and backward tasks must take more than twice as long.
  double seconds[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const models::Workload w = small_gpt(i == 0 ? 2048 : 4096, 1024);
    ShardRunner runner(w, 0);
    const std::vector<Trace> traces = runner.run(1, 1);
    ASSERT_EQ(traces.size(), 1u);
    expect_follows_program(w, 0, traces[0]);
    const auto& tasks = w.stages[0].tasks;
    for (std::size_t t = 0; t < tasks.size(); ++t) {
      const TaskRecord& r = traces[0].units[0].records[t];
      EXPECT_LE(executed_flops(w, tasks[t]), static_cast<double>(r.end - r.start) * 1e-9 * peak) << "task " << t;
    }
    seconds[i] = forward_backward_s(w, 0, traces[0]);
  }
  EXPECT_GT(seconds[1], 2 * seconds[0]);
}

TEST(ShardRunner, InvalidIterationCountsAreConfigErrors) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  ShardRunner runner(tiny_gpt(), 1);
  EXPECT_THROW(runner.run(0, 0), sim::ConfigError);
  EXPECT_THROW(runner.run(-1, 1), sim::ConfigError);
}

TEST(ShardRunner, AShardLargerThanTheGpuIsAConfigErrorNamingTheBytes) {
  if (!gpu_visible()) GTEST_SKIP() << "no visible GPU";
  // One layer of hidden 32768 per stage: its optimizer step streams about 0.36 TB, more than any GPU has.
  const models::Workload w = small_gpt(32768, 128);
  try {
    ShardRunner runner(w, 0);
    ADD_FAILURE() << "a shard of " << runner.device_bytes() << " bytes fitted";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.tensor_model_parallel_size");
    EXPECT_NE(e.valid().find("bytes of device memory"), std::string::npos) << e.what();
  }
  // The failed allocation leaves the device usable.
  ShardRunner small(tiny_gpt(), 0);
  EXPECT_EQ(small.run(0, 1).size(), 1u);
}

}  // namespace
}  // namespace megasim::backend::cuda
