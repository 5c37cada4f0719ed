// The real backends refuse what their communicators and kernels cannot run, naming the key:
// context parallelism, expert groups, FP8.
#include "backend/real_backend_scope.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/error.h"

namespace megasim::backend {
namespace {

std::string refusal(const models::Workload& w) {
  try {
    require_real_backend_groups(w, "cpu");
  } catch (const sim::ConfigError& e) {
    return e.key();
  }
  return "";
}

TEST(RealBackendScope, RefusesWhatOnlyTheSimulatorModels) {
  models::Workload w;
  w.plan.tp = 2;
  w.plan.etp = 2;
  EXPECT_EQ(refusal(w), "");  // experts whole on every TP group (or none): runs for real
  models::Workload cp = w;
  cp.plan.cp = 2;
  EXPECT_EQ(refusal(cp), "plan.context_parallel_size");
  models::Workload ep = w;
  ep.plan.ep = 4;
  EXPECT_EQ(refusal(ep), "plan.expert_model_parallel_size");
  models::Workload etp = w;
  etp.plan.etp = 1;
  EXPECT_EQ(refusal(etp), "plan.expert_tensor_parallel_size");
  models::Workload fp8 = w;
  fp8.plan.plan.fp8 = models::Fp8Format::kE4m3;
  EXPECT_EQ(refusal(fp8), "plan.fp8");
}

// One rank's compute (the cuda shard mode) needs no groups: only FP8 kernels are refused.
TEST(RealBackendScope, OneRanksComputeRefusesOnlyFp8) {
  models::Workload w;
  w.plan.tp = 2;
  w.plan.etp = 1;
  w.plan.ep = 4;
  w.plan.cp = 2;
  EXPECT_NO_THROW(require_real_backend_kernels(w, "cuda"));
  w.plan.plan.fp8 = models::Fp8Format::kHybrid;
  try {
    require_real_backend_kernels(w, "cuda");
    ADD_FAILURE() << "FP8 not refused";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "plan.fp8");
  }
}

}  // namespace
}  // namespace megasim::backend
