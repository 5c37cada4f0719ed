// The cuda backend's whole-plan mode: the pipeline channels over NCCL (pipeline_channels.h), the
// collectives' sizes (nccl_collectives.h), and, where GPUs are visible, ranks played by threads of
// this process (one GPU each, NCCL communicators from one unique id), checked against their stage
// programs; a rank whose peer never comes is stopped by the watchdog.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_info.h"
#include "backend/cuda/nccl_collectives.h"
#include "backend/cuda/nccl_comms.h"
#include "backend/cuda/pipeline_channels.h"
#include "backend/cuda/rank_executor.h"
#include "models/plan.h"
#include "models/workload.h"

namespace megasim::backend::cuda {
namespace {

models::Workload gpt(std::int64_t tp, std::int64_t pp, std::int64_t dp, std::int64_t layers_per_chunk = 0) {
  models::ModelSpec model;
  model.num_layers = 4;
  model.hidden_size = 512;
  model.num_attention_heads = 8;
  model.seq_length = 256;
  model.vocab_size = 1024;
  models::ParallelPlan plan;
  plan.tensor_model_parallel_size = tp;
  plan.pipeline_model_parallel_size = pp;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 8 * dp;
  plan.num_layers_per_virtual_pipeline_stage = layers_per_chunk;
  plan.sequence_parallel = tp > 1;
  plan.use_distributed_optimizer = dp > 1;
  const std::int64_t world = tp * pp * dp;
  return models::build_workload(model, models::resolve_plan(model, plan, world, std::max<std::int64_t>(world, 8)));
}

TEST(PipelineChannels, EveryAdjacentOrderedPairHasOneChannelAndRoundsDoNotShareStages) {
  for (std::int64_t pp = 1; pp <= 9; ++pp) {
    // Each stage is in at most one pair per round, and in exactly the pairs that contain it.
    for (std::int64_t stage = 0; stage < pp; ++stage) {
      int pairs_of_stage = 0;
      for (int round = 0; round < kPairSplitRounds; ++round) {
        const std::optional<std::int64_t> pair = pair_in_round(pp, stage, round);
        if (!pair) continue;
        ++pairs_of_stage;
        EXPECT_EQ(split_round(pp, *pair), round);
        EXPECT_GE(rank_in_pair(pp, *pair, stage), 0) << "pp " << pp << " stage " << stage;
      }
      EXPECT_EQ(pairs_of_stage, pp == 1 ? 0 : (pp == 2 ? 1 : 2)) << "pp " << pp << " stage " << stage;
    }
    // The 2 * pairs directed channels are all different, and both ends agree on them.
    std::set<std::pair<std::int64_t, bool>> seen;
    for (std::int64_t from = 0; from < pp; ++from) {
      for (const std::int64_t to : {(from + 1) % pp, (from + pp - 1) % pp}) {
        if (to == from) continue;
        const DirectedPair d = directed_pair(pp, from, to);
        seen.insert({d.pair, d.up});
        // "up" sends from the pair's rank 0 to its rank 1.
        EXPECT_EQ(rank_in_pair(pp, d.pair, from), d.up ? 0 : 1);
        EXPECT_EQ(rank_in_pair(pp, d.pair, to), d.up ? 1 : 0);
      }
    }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 2 * pair_count(pp)) << "pp " << pp;
  }
  EXPECT_THROW(static_cast<void>(directed_pair(4, 0, 2)), CudaError);
  EXPECT_THROW(static_cast<void>(directed_pair(4, 1, 1)), CudaError);
  EXPECT_THROW(static_cast<void>(directed_pair(1, 0, 0)), CudaError);
}

TEST(PipelineChannels, MegatronSchedulesMatchInIssueOrder) {
  // 1F1B on 2 and 4 stages, interleaved (2 chunks of 1 layer) on 2 and 4 stages with wrap-around.
  for (const models::Workload& w : {gpt(1, 2, 1), gpt(1, 4, 1), gpt(1, 2, 1, 1), gpt(1, 4, 1, 1), gpt(2, 2, 2)}) {
    EXPECT_NO_THROW(check_fifo_order(w)) << "pp " << w.plan.pp << " vpp " << w.plan.virtual_stages;
  }
}

TEST(PipelineChannels, ReorderedReceivesAreRefused) {
  models::Workload w = gpt(1, 2, 1);
  std::vector<models::Task*> receives;
  for (models::Task& t : w.stages[1].tasks) {
    if (t.kind == models::TaskKind::kPpRecv) receives.push_back(&t);
  }
  ASSERT_GE(receives.size(), 2u);
  std::swap(receives[0]->tag, receives[1]->tag);
  try {
    check_fifo_order(w);
    ADD_FAILURE() << "swapped receives accepted";
  } catch (const CudaError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 0 -> stage 1"), std::string::npos) << e.what();
  }
}

TEST(CollectiveSize, NcclTestsSizesConserveBytes) {
  using models::CollectiveOp;
  // 1 MiB over 8 ranks: 524288 bf16 values, 65536 per rank.
  const CollectiveSize rs = collective_size(CollectiveOp::kReduceScatter, 1 << 20, 8);
  EXPECT_EQ(rs.count, 65536u);
  EXPECT_EQ(rs.input_bytes, 8 * rs.output_bytes);
  EXPECT_EQ(rs.input_bytes, std::size_t{1} << 20);
  const CollectiveSize ag = collective_size(CollectiveOp::kAllGather, 1 << 20, 8);
  EXPECT_EQ(ag.output_bytes, 8 * ag.input_bytes);
  EXPECT_EQ(ag.count, 65536u);
  const CollectiveSize ar = collective_size(CollectiveOp::kAllReduce, 1 << 20, 8);
  EXPECT_EQ(ar.input_bytes, ar.output_bytes);
  EXPECT_EQ(ar.count, 524288u);
  // Never less than one element per rank.
  EXPECT_EQ(collective_size(CollectiveOp::kAllGather, 0, 4).count, 1u);
  EXPECT_THROW(static_cast<void>(collective_size(CollectiveOp::kAllToAll, 64, 2)), CudaError);
  EXPECT_THROW(static_cast<void>(collective_size(CollectiveOp::kAllReduce, 64, 0)), CudaError);
}

// Runs `body(rank)` on `ranks` threads, rank r on GPU r, with NCCL communicators for `layout` from one
// unique id; returns each rank's exception message ("" when none).
std::vector<std::string> run_ranks(const models::ParallelLayout& layout,
                                   const std::function<void(NcclComms&, int rank)>& body) {
  const auto ranks = static_cast<int>(layout.world_size());
  std::mutex mutex;
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  // Rank 0 makes the id before the others read it: a broadcast within one process.
  std::promise<NcclId> id_promise;
  std::shared_future<NcclId> id_future = id_promise.get_future().share();
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (cudaSetDevice(r) != cudaSuccess) throw CudaError("cudaSetDevice");
        NcclComms comms(layout, r, ranks, [&](NcclId& id) {
          if (r == 0) {
            id_promise.set_value(id);
          } else {
            id = id_future.get();
          }
        });
        body(comms, r);
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(mutex);
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return errors;
}

// Checks one measured iteration against the stage programs: every task ends after it starts and
// after its dependencies end; compute tasks do not overlap; the iteration ends with the last task.
void expect_follows_programs(const models::Workload& w, const Trace& trace) {
  ASSERT_EQ(static_cast<std::int64_t>(trace.units.size()), w.plan.world_size);
  sim::SimTime latest = 0;
  for (const TraceUnit& unit : trace.units) {
    const auto& tasks = w.stages[static_cast<std::size_t>(unit.stage)].tasks;
    ASSERT_EQ(unit.records.size(), tasks.size());
    sim::SimTime compute_end = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskRecord& r = unit.records[i];
      EXPECT_LE(r.start, r.end) << "rank " << unit.ranks[0] << " task " << i;
      for (const std::int32_t d : tasks[i].deps) {
        EXPECT_GE(r.end, unit.records[static_cast<std::size_t>(d)].end) << "rank " << unit.ranks[0] << " task " << i;
      }
      if (tasks[i].kind == models::TaskKind::kCompute) {
        EXPECT_GE(r.start, compute_end) << "rank " << unit.ranks[0] << " task " << i;
        compute_end = r.end;
        EXPECT_LE(r.tp_exposed, r.end - r.start);
      }
      latest = std::max(latest, r.end);
    }
  }
  EXPECT_EQ(trace.iteration_time, latest);
}

int visible_gpu_count() {
  return static_cast<int>(visible_gpus().size());
}

TEST(CudaRankExecutor, OneGpuPlanFollowsItsProgram) {
  if (visible_gpu_count() < 1) GTEST_SKIP() << "no visible GPU";
  const models::Workload w = gpt(1, 1, 1);
  std::vector<Trace> traces;
  const std::vector<std::string> errors = run_ranks(w.plan.layout(), [&](NcclComms& comms, int) {
    traces = run_cuda_iterations(w, comms, CudaRunOptions{1, 2, std::chrono::seconds(60)});
  });
  EXPECT_EQ(errors[0], "");
  ASSERT_EQ(traces.size(), 2u);
  for (const Trace& trace : traces) {
    EXPECT_EQ(trace.backend, "cuda");
    expect_follows_programs(w, trace);
    EXPECT_GT(trace.iteration_time, 0);
  }
}

TEST(CudaRankExecutor, PipelineAndDataParallelPlansFollowTheirPrograms) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than 2 visible GPUs";
  for (const models::Workload& w : {gpt(1, 2, 1), gpt(1, 1, 2), gpt(2, 1, 1), gpt(1, 2, 1, 1)}) {
    std::vector<Trace> traces;
    const std::vector<std::string> errors = run_ranks(w.plan.layout(), [&](NcclComms& comms, int rank) {
      std::vector<Trace> mine = run_cuda_iterations(w, comms, CudaRunOptions{1, 1, std::chrono::seconds(60)});
      if (rank == 0) traces = std::move(mine);
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "");
    ASSERT_EQ(traces.size(), 1u);
    expect_follows_programs(w, traces[0]);
  }
}

TEST(CudaRankExecutor, AStalledPeerIsAbortedByTheWatchdog) {
  if (visible_gpu_count() < 2) GTEST_SKIP() << "fewer than 2 visible GPUs";
  const models::Workload w = gpt(1, 2, 1);
  std::atomic<bool> rank0_done{false};
  const std::vector<std::string> errors = run_ranks(w.plan.layout(), [&](NcclComms& comms, int rank) {
    if (rank == 1) {
      // Stage 1 never comes to the iteration; once stage 0 gave up, it drops its communicators as a
      // dead process would.
      while (!rank0_done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      comms.abort();
      return;
    }
    CudaRankExecutor executor(w, comms, std::chrono::milliseconds(2000));
    const auto start = std::chrono::steady_clock::now();
    try {
      executor.run_iteration();
    } catch (...) {
      rank0_done = true;
      EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2000));
      throw;
    }
    rank0_done = true;
  });
  EXPECT_NE(errors[0].find("rank 0: iteration aborted: no progress for 2 s"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("the iteration barrier"), std::string::npos) << errors[0];
  EXPECT_EQ(errors[1], "");
}

}  // namespace
}  // namespace megasim::backend::cuda
