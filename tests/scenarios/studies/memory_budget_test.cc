// The memory budget's bound from the plan alone (planned_footprint) against the footprint of the
// workload it stands for (iteration_footprint), and the task-record bound that holds on any machine.
#include "scenarios/studies/memory_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "models/plan.h"
#include "models/workload.h"
#include "scenarios/config/loader.h"
#include "tests/scenarios/config_error_util.h"

namespace megasim::scenarios {
namespace {

using testing::thrown_key;

Scenario shipped(const std::string& file) {
  return load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/scenarios/" + file);
}

// The bound is checked before the workload exists, so it must hold for every plan: interleaved or
// not, with and without the distributed optimizer's buckets and the tied embeddings' exchange.
TEST(MemoryBudget, ThePlannedFootprintBoundsTheBuiltWorkloads) {
  for (const char* file :
       {"megascale/175b_megascale.toml", "megascale/175b_megatron.toml", "megatron/korthikanti_22b.toml",
        "megatron/narayanan_1p7b.toml", "megatron/korthikanti_530b.toml", "validate/tiny_gpt_pp2.toml"}) {
    const Scenario s = shipped(file);
    const models::ResolvedPlan plan = models::resolve_plan(s.model, s.plan, s.cluster.gpus, s.cluster.gpus_per_server);
    const models::Workload w = models::build_workload(s.model, plan);
    for (const bool flows : {false, true}) {
      const SimulationFootprint built = iteration_footprint(w, s.cluster.gpus, flows);
      const SimulationFootprint planned = planned_footprint(s.model, plan, s.cluster.gpus, flows);
      EXPECT_GE(planned.program_tasks, built.program_tasks) << file;
      EXPECT_GE(planned.task_records, built.task_records) << file;
      EXPECT_GE(planned.bytes, built.bytes) << file;
      // Within the factor of the rule (3 tasks a pipeline step where pp = 1 has 1): not a blanket bound.
      EXPECT_LE(planned.program_tasks, 3 * built.program_tasks + 8 * plan.pp) << file;
    }
  }
}

// MegaScale's 175B plan on 98,304 GPUs, the largest this project runs (tests/cli/scale_limits_test.cc),
// stays far inside the task-record bound; a global batch of 2^24 samples on 64 GPUs (2^20
// micro-batches per replica) is past it on any machine, named by its key.
TEST(MemoryBudget, TaskRecordsAreBoundedWhateverTheMachine) {
  Scenario big = shipped("megascale/175b_megascale.toml");
  apply_overrides(big, {"cluster.gpus=98304", "plan.global_batch_size=12288"});
  const models::ResolvedPlan plan =
      models::resolve_plan(big.model, big.plan, big.cluster.gpus, big.cluster.gpus_per_server);
  const SimulationFootprint f = planned_footprint(big.model, plan, big.cluster.gpus, false);
  EXPECT_LT(f.task_records * 30, kMaxTaskRecords) << f.task_records;

  Scenario small = load_scenario_file(std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml");
  apply_override(small, "plan.global_batch_size=16777216");
  const models::ResolvedPlan huge =
      models::resolve_plan(small.model, small.plan, small.cluster.gpus, small.cluster.gpus_per_server);
  EXPECT_EQ(huge.num_microbatches, 1 << 20);
  const SimulationFootprint g = planned_footprint(small.model, huge, small.cluster.gpus, false);
  EXPECT_GT(g.task_records, kMaxTaskRecords);
  EXPECT_EQ(thrown_key([&] { require_memory_for(g, 1); }), "plan.global_batch_size");
}

}  // namespace
}  // namespace megasim::scenarios
