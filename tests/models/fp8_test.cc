// FP8 training (plan.fp8): the linear layers' GEMMs at the FP8 peak with 1-byte inputs and
// Transformer Engine's casts as memory-bound ops, everything else BF16, the same FLOP count, FP8
// parameter all-gathers, and the refusal of FP8 on a GPU without it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "models/compute_cost.h"
#include "models/flops.h"
#include "models/gpu_spec.h"
#include "models/layer_ops.h"
#include "models/workload.h"
#include "models_test_util.h"

namespace megasim::models {
namespace {

using testing::plan_error_key;

ModelSpec llama() {
  return testing::llama_style(8, 4096);
}

ParallelPlan fp8_plan(Fp8Format format) {
  ParallelPlan p;
  p.tensor_model_parallel_size = 2;
  p.sequence_parallel = true;
  p.use_flash_attention = true;
  p.global_batch_size = 4;
  p.fp8 = format;
  return p;
}

// A compute-bound GEMM at the FP8 peak: the same efficiency curve (scale 1) against twice the
// peak, so its time above the launch overhead halves exactly (1,979 against 989 TFLOPS).
TEST(Fp8, ComputeBoundGemmRunsAtTheFp8Peak) {
  const GpuSpec& h100 = find_gpu("H100");
  const ComputeCalibration calib = default_compute_calibration(h100);
  const GemmShape big{8192, 8192, 8192, 1};
  const double launch = static_cast<double>(calib.launch_overhead_ns) * 1e-9;
  const double bf16 = gemm_time_s(big, h100, calib) - launch;
  const double fp8 = fp8_gemm_time_s(big, h100, calib) - launch;
  EXPECT_NEAR(fp8, bf16 * 989.0 / 1979.0, 1e-12);
  ComputeCalibration slower = calib;
  slower.fp8_gemm_efficiency_scale = 0.8;
  EXPECT_NEAR(fp8_gemm_time_s(big, h100, slower) - launch, fp8 / 0.8, 1e-12);
}

// Which ops are FP8: the linear layers' GEMMs only, each after its cast (4 bytes per input element
// forward, per output-gradient element backward); FLOPs are those of BF16 training.
TEST(Fp8, OnlyTheLinearLayersGemmsAreFp8) {
  const ModelSpec m = llama();
  const ResolvedPlan bf16 = resolve_plan(m, fp8_plan(Fp8Format::kNone), 2, 8);
  const ResolvedPlan fp8 = resolve_plan(m, fp8_plan(Fp8Format::kE4m3), 2, 8);
  std::set<std::string> fp8_ops;
  for (const LayerOp& op : layer_ops(m, fp8, Pass::kForward)) {
    if (op.fp8) fp8_ops.insert(op.name);
    if (op.name == "qkv_fp8_cast") {
      EXPECT_DOUBLE_EQ(op.bytes, 4.0 * 4096 * 4096);  // the T x h input, T = s
    }
  }
  EXPECT_EQ(fp8_ops, (std::set<std::string>{"qkv", "proj", "fc1", "fc2"}));
  for (const LayerOp& op : output_ops(m, fp8, Pass::kForward)) EXPECT_FALSE(op.fp8) << op.name;
  for (const LayerOp& op : layer_ops(m, fp8, Pass::kBackward)) {
    if (op.kind == OpKind::kGemm) {
      EXPECT_TRUE(op.fp8) << op.name;
    }
  }
  EXPECT_DOUBLE_EQ(iteration_flops(m, fp8).model, iteration_flops(m, bf16).model);
  // The hybrid format (E5M2 gradients) runs at the same speed: the same ops.
  const ResolvedPlan hybrid = resolve_plan(m, fp8_plan(Fp8Format::kHybrid), 2, 8);
  EXPECT_EQ(layer_ops(m, hybrid, Pass::kBackward).size(), layer_ops(m, fp8, Pass::kBackward).size());
}

// fp8_param_gather: the distributed optimizer's parameter all-gathers move 1 byte per parameter.
TEST(Fp8, Fp8ParamGatherHalvesTheParameterAllGathers) {
  const ModelSpec m = llama();
  const auto gathered = [&](bool fp8_gather) {
    ParallelPlan p = fp8_plan(Fp8Format::kE4m3);
    p.use_distributed_optimizer = true;
    p.fp8_param_gather = fp8_gather;
    const Workload w = build_workload(m, resolve_plan(m, p, 8, 8));
    double bytes = 0;
    for (const Task& t : w.stages[0].tasks) {
      if (t.category == TaskCategory::kParameterGather) bytes += t.bytes;
    }
    return bytes;
  };
  EXPECT_DOUBLE_EQ(gathered(true), gathered(false) / 2);
  ParallelPlan no_fp8 = fp8_plan(Fp8Format::kNone);
  no_fp8.use_distributed_optimizer = true;
  no_fp8.fp8_param_gather = true;
  EXPECT_EQ(plan_error_key(m, no_fp8, 8), "plan.fp8_param_gather");
}

TEST(Fp8, AGpuWithoutFp8IsRefusedByName) {
  EXPECT_NO_THROW(require_fp8_support(find_gpu("H800"), "e4m3"));
  EXPECT_NO_THROW(require_fp8_support(find_gpu("A100"), "none"));
  try {
    require_fp8_support(find_gpu("A100"), "hybrid");
    FAIL() << "FP8 on an A100 was accepted";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.fp8");
  }
  ComputeCalibration c = default_compute_calibration(find_gpu("H100"));
  c.fp8_gemm_efficiency_scale = 2;  // 2 x 0.803 of the FP8 peak: beyond it
  EXPECT_THROW(validate(c), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::models
