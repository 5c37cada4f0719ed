// Runs inside a job of 2 MPI processes (mpi_test_main.cc): every rank runs every test, so a test
// makes the same collective calls on every rank and checks with EXPECT (an ASSERT that returns on
// one rank only would leave the other waiting in a collective).
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/mpi_probe.h"
#include "backend/cpu/mpi_session.h"
#include "models/parallel_groups.h"

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
  const RankGroups groups(layout, world_rank());
  expect_group(groups.tensor(), layout, models::GroupKind::kTensor);
  expect_group(groups.pipeline(), layout, models::GroupKind::kPipeline);
  expect_group(groups.data(), layout, models::GroupKind::kData);
}

TEST(MpiJobTest, SessionKnowsRankAndSize) {
  // MPI is already running (the test main's session): this one only reads the job's shape.
  const MpiSession session(nullptr, nullptr);
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
    const RankGroups groups(models::ParallelLayout{.tensor = 2, .pipeline = 1, .data = 2}, world_rank());
    ADD_FAILURE() << "a plan of 4 processes was accepted by a job of 2";
  } catch (const MpiError& error) {
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

TEST(MpiJobTest, AllReduceOfMoreBytesTakesLonger) {
  const double small_s = measure_allreduce_s(8.0 * 1024);
  const double large_s = measure_allreduce_s(8.0 * 1024 * 1024);
  EXPECT_GT(large_s, small_s);
  EXPECT_EQ(world_min(large_s), world_max(large_s));
  if (world_rank() == 0) std::printf("all-reduce: 8 KiB %.2f us, 8 MiB %.3f ms\n", small_s * 1e6, large_s * 1e3);
}

}  // namespace
}  // namespace megasim::backend::cpu
