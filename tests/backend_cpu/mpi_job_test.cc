// Runs inside a job of 2 MPI processes (mpi_test_main.cc): every rank runs every test, so a test
// makes the same collective calls on every rank and checks with EXPECT (an ASSERT that returns on
// one rank only would leave the other waiting in a collective).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_executor.h"
#include "backend/cpu/mpi_probe.h"
#include "backend/mpi/mpi_session.h"
#include "models/parallel_groups.h"
#include "models/plan.h"
#include "models/workload.h"
#include "sim/error.h"

namespace megasim::backend::cpu {
namespace {

constexpr int kJobSize = 2;

int world_rank() {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

double world_min(double value) {
  double result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  return result;
}

double world_max(double value) {
  double result = 0;
  MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return result;
}

// `comm` holds exactly the members of this rank's group of `kind`, ranked by position in it.
void expect_group(MPI_Comm comm, const models::ParallelLayout& layout, models::GroupKind kind) {
  const std::int64_t me = world_rank();
  std::vector<std::int64_t> members;
  for (const std::vector<std::int64_t>& group : models::groups(layout, kind)) {
    if (std::find(group.begin(), group.end(), me) != group.end()) members = group;
  }
  int size = 0;
  int rank = -1;
  MPI_Comm_size(comm, &size);
  MPI_Comm_rank(comm, &rank);
  const int mine = static_cast<int>(me);
  int sum = 0;
  MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, comm);
  EXPECT_EQ(size, static_cast<int>(members.size()));
  EXPECT_EQ(rank, std::find(members.begin(), members.end(), me) - members.begin());
  EXPECT_EQ(sum, std::accumulate(members.begin(), members.end(), std::int64_t{0}));
}

void expect_groups(const models::ParallelLayout& layout) {
  const mpi::RankGroups groups(layout, world_rank());
  expect_group(groups.tensor(), layout, models::GroupKind::kTensor);
  expect_group(groups.pipeline(), layout, models::GroupKind::kPipeline);
  expect_group(groups.data(), layout, models::GroupKind::kData);
}

TEST(MpiJobTest, SessionKnowsRankAndSize) {
  // MPI is already running (the test main's session): this one only reads the job's shape.
  const mpi::MpiSession session(nullptr, nullptr);
  EXPECT_EQ(session.size(), kJobSize);
  EXPECT_EQ(session.rank(), world_rank());
}

TEST(MpiJobTest, GroupsOfTwoPipelineStages) {
  expect_groups(models::ParallelLayout{.tensor = 1, .pipeline = 2, .data = 1});
}

TEST(MpiJobTest, GroupsOfTwoDataParallelRanks) {
  expect_groups(models::ParallelLayout{.tensor = 1, .pipeline = 1, .data = 2});
}

TEST(MpiJobTest, GroupsOfTwoTensorParallelRanks) {
  expect_groups(models::ParallelLayout{.tensor = 2, .pipeline = 1, .data = 1});
}

TEST(MpiJobTest, GroupsForAnotherWorldSizeAreRefused) {
  try {
    const mpi::RankGroups groups(models::ParallelLayout{.tensor = 2, .pipeline = 1, .data = 2}, world_rank());
    ADD_FAILURE() << "a plan of 4 processes was accepted by a job of 2";
  } catch (const mpi::MpiError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("needs 4 processes"), std::string::npos) << message;
    EXPECT_NE(message.find("has 2"), std::string::npos) << message;
  }
}

TEST(MpiJobTest, PointToPointIsMeasuredAndTheSameOnEveryRank) {
  const LinkFit fit = measure_point_to_point();
  EXPECT_GT(fit.latency_s, 0);
  EXPECT_GT(fit.bytes_per_s, 0);
  EXPECT_EQ(world_min(fit.latency_s), world_max(fit.latency_s));
  EXPECT_EQ(world_min(fit.bytes_per_s), world_max(fit.bytes_per_s));
  ASSERT_GE(fit.points.size(), 2U);
  EXPECT_EQ(fit.points.front().bytes, 8);
  EXPECT_EQ(fit.points.back().bytes, 64.0 * 1024 * 1024);
  for (const TransferPoint& point : fit.points) EXPECT_GT(point.seconds, 0) << point.bytes << " B";
  // Noise can reorder neighbouring small sizes; the largest message against the first of 64 KiB
  // and up (512 times fewer bytes) cannot be.
  const auto first_large = std::find_if(fit.points.begin(), fit.points.end(),
                                        [](const TransferPoint& point) { return point.bytes >= 64.0 * 1024; });
  ASSERT_NE(first_large, fit.points.end());
  EXPECT_GT(fit.points.back().seconds, first_large->seconds);
  if (world_rank() == 0) {
    std::printf("point-to-point: latency %.2f us, bandwidth %.2f GB/s\n", fit.latency_s * 1e6, fit.bytes_per_s / 1e9);
  }
}

// The test job runs on one machine: one host of both ranks, an intra-node group of both, no
// inter-node link; the point-to-point probe between two named ranks answers on every rank.
TEST(MpiJobTest, HostGroupsOfAOneMachineJob) {
  const HostGroups hosts = world_host_groups();
  EXPECT_EQ(hosts.host_count(), 1);
  EXPECT_EQ(hosts.ranks_per_host, kJobSize);
  EXPECT_TRUE(hosts.measurable(HostLink::kIntraNode));
  EXPECT_FALSE(hosts.measurable(HostLink::kInterNode));
  EXPECT_EQ(hosts.local_index[static_cast<std::size_t>(world_rank())], world_rank());
  const HostComm intra(hosts, HostLink::kIntraNode);
  int size = 0;
  MPI_Comm_size(intra.get(), &size);
  EXPECT_EQ(size, kJobSize);
  const HostComm inter(hosts, HostLink::kInterNode);  // one rank per local index: alone
  MPI_Comm_size(inter.get(), &size);
  EXPECT_EQ(size, 1);

  const LinkFit reversed = measure_point_to_point_between(1, 0, 64.0 * 1024, 3);
  EXPECT_GT(reversed.latency_s, 0);
  EXPECT_GT(reversed.bytes_per_s, 0);
  EXPECT_EQ(world_min(reversed.bytes_per_s), world_max(reversed.bytes_per_s));
  EXPECT_EQ(reversed.points.back().bytes, 64.0 * 1024);
}

TEST(MpiJobTest, AllReduceOfMoreBytesTakesLonger) {
  const double small_s = measure_collective_s(MPI_COMM_WORLD, models::CollectiveOp::kAllReduce, 8.0 * 1024);
  const double large_s = measure_collective_s(MPI_COMM_WORLD, models::CollectiveOp::kAllReduce, 8.0 * 1024 * 1024);
  EXPECT_GT(large_s, small_s);
  EXPECT_EQ(world_min(large_s), world_max(large_s));
  if (world_rank() == 0) std::printf("all-reduce: 8 KiB %.2f us, 8 MiB %.3f ms\n", small_s * 1e6, large_s * 1e3);
}

models::ModelSpec tiny_model() {
  models::ModelSpec model;
  model.num_layers = 2;
  model.hidden_size = 128;
  model.num_attention_heads = 4;
  model.seq_length = 64;
  model.vocab_size = 1024;
  return model;
}

// A small GPT of models::build_workload, split over this job's 2 ranks as `tp` x `pp` x (2 / tp / pp).
models::Workload tiny_workload(std::int64_t tp, std::int64_t pp, bool overlap) {
  const models::ModelSpec model = tiny_model();
  models::ParallelPlan plan;
  plan.tensor_model_parallel_size = tp;
  plan.pipeline_model_parallel_size = pp;
  plan.micro_batch_size = 1;
  plan.global_batch_size = 4;
  plan.use_distributed_optimizer = true;
  plan.overlap_grad_reduce = overlap;
  plan.overlap_param_gather = overlap;
  return models::build_workload(model, models::resolve_plan(model, plan, kJobSize, kJobSize));
}

// The invariants of models/workload.h's semantics on every rank's records: times inside the
// iteration, every task after its dependencies, one task at a time on the compute and dp streams in
// program order, and the iteration time the last end.
void expect_schedule_semantics(const models::Workload& workload, const Trace& trace) {
  EXPECT_EQ(trace.backend, "cpu");
  ASSERT_EQ(trace.units.size(), static_cast<std::size_t>(kJobSize));
  sim::SimTime last_end = 0;
  for (std::size_t u = 0; u < trace.units.size(); ++u) {
    const TraceUnit& unit = trace.units[u];
    SCOPED_TRACE("rank " + std::to_string(u));
    EXPECT_EQ(unit.ranks, std::vector<std::int64_t>{static_cast<std::int64_t>(u)});
    const auto& tasks = workload.stages.at(static_cast<std::size_t>(unit.stage)).tasks;
    ASSERT_EQ(unit.records.size(), tasks.size());
    std::map<models::StreamKind, sim::SimTime> stream_free;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const TaskRecord& r = unit.records[i];
      EXPECT_LE(0, r.start);
      EXPECT_LE(r.start, r.transfer_start);
      EXPECT_LE(r.transfer_start, r.end);
      for (const std::int32_t d : tasks[i].deps) {
        EXPECT_LE(unit.records[static_cast<std::size_t>(d)].end, r.start);
      }
      const models::StreamKind stream = tasks[i].stream;
      if (stream == models::StreamKind::kCompute || stream == models::StreamKind::kDp) {
        EXPECT_LE(stream_free[stream], r.start) << "task " << i << " overlaps its stream's previous task";
        stream_free[stream] = r.end;
      }
      if (tasks[i].kind == models::TaskKind::kCompute) {
        EXPECT_GT(r.end, r.start) << "compute task " << i;
      }
      last_end = std::max(last_end, r.end);
    }
  }
  EXPECT_EQ(trace.iteration_time, last_end);
}

TEST(CpuBackendJob, PipelineIterationsFollowTheSchedule) {
  const models::Workload workload = tiny_workload(1, 2, false);
  const std::vector<Trace> traces = run_cpu_iterations(workload, {.warmup_iterations = 0, .iterations = 2});
  if (world_rank() != 0) {
    EXPECT_TRUE(traces.empty());
    return;
  }
  ASSERT_EQ(traces.size(), 2u);
  for (const Trace& trace : traces) expect_schedule_semantics(workload, trace);
  EXPECT_EQ(traces[0].units[1].stage, 1);
  // A transfer's data moves once both sides are posted: the send and its recv share that instant.
  const auto& first = workload.stages[0].tasks;
  const auto& last = workload.stages[1].tasks;
  int pairs = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (first[i].kind != models::TaskKind::kPpSend) continue;
    for (std::size_t j = 0; j < last.size(); ++j) {
      if (last[j].kind != models::TaskKind::kPpRecv || last[j].tag != first[i].tag) continue;
      const TaskRecord& send = traces[0].units[0].records[i];
      const TaskRecord& recv = traces[0].units[1].records[j];
      EXPECT_EQ(send.transfer_start, std::min(send.end, std::max(send.start, recv.start)));
      EXPECT_EQ(recv.transfer_start, std::min(recv.end, std::max(send.start, recv.start)));
      ++pairs;
    }
  }
  // One activation per micro-batch, and the tied word-embedding gradient (workload.h).
  EXPECT_EQ(pairs, 4 + 1);
}

TEST(CpuBackendJob, DataParallelIterationsFollowTheSchedule) {
  for (const bool overlap : {false, true}) {
    const models::Workload workload = tiny_workload(1, 1, overlap);
    const std::vector<Trace> traces = run_cpu_iterations(workload, {.warmup_iterations = 1, .iterations = 1});
    if (world_rank() != 0) continue;
    ASSERT_EQ(traces.size(), 1u);
    expect_schedule_semantics(workload, traces[0]);
    EXPECT_EQ(traces[0].units[1].replica, 1);
  }
}

TEST(CpuBackendJob, TensorParallelIterationsFollowTheSchedule) {
  const models::Workload workload = tiny_workload(2, 1, false);
  const std::vector<Trace> traces = run_cpu_iterations(workload, {.warmup_iterations = 0, .iterations = 1});
  if (world_rank() != 0) return;
  ASSERT_EQ(traces.size(), 1u);
  expect_schedule_semantics(workload, traces[0]);
  // Both ranks of the tensor group spend time in its collectives.
  for (const TraceUnit& unit : traces[0].units) {
    sim::SimTime tp = 0;
    for (const TaskRecord& r : unit.records) tp += r.tp_exposed;
    EXPECT_GT(tp, 0);
  }
}

// Rank 1 never comes to the iteration: rank 0 gives up after the timeout with an error naming the
// barrier it waits in, instead of hanging; rank 1 then arrives late and the job goes on.
TEST(CpuBackendJob, AMissingPeerIsReportedAfterTheTimeout) {
  const models::Workload workload = tiny_workload(1, 1, false);
  {
    CpuRankExecutor executor(workload, world_rank(), std::chrono::milliseconds(300));
    if (world_rank() == 0) {
      const auto start = std::chrono::steady_clock::now();
      try {
        executor.run_iteration();
        ADD_FAILURE() << "an iteration without its peer finished";
      } catch (const mpi::MpiError& e) {
        EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
        EXPECT_NE(std::string(e.what()).find("rank 0: no progress for 0.3 s; still waiting for the iteration barrier"),
                  std::string::npos)
            << e.what();
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(600));
      // The late arrival, with the executor's own call (Open MPI matches a non-blocking barrier with
      // a non-blocking one): completes rank 0's abandoned barrier.
      MPI_Request late = MPI_REQUEST_NULL;
      MPI_Ibarrier(MPI_COMM_WORLD, &late);
      MPI_Wait(&late, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }  // rank 0's executor frees the barrier request it abandoned
}

TEST(CpuBackendJob, APlanForAnotherWorldSizeIsRefusedOnEveryRank) {
  const models::ModelSpec model = tiny_model();
  models::ParallelPlan plan;
  plan.pipeline_model_parallel_size = 2;
  plan.global_batch_size = 4;
  const models::Workload four = models::build_workload(model, models::resolve_plan(model, plan, 4, 4));
  EXPECT_THROW(run_cpu_iterations(four, {}), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::backend::cpu
