// Where a process of a multi-process job sits, from its launcher's environment (backend/launch_env.h).
#include "backend/launch_env.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "sim/error.h"

namespace megasim::backend {
namespace {

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(LaunchedRank, NoLauncherMeansNoRank) {
  EXPECT_FALSE(launched_rank(env_of({})).has_value());
  // A rank without a size is not a launch (and vice versa).
  EXPECT_FALSE(launched_rank(env_of({{"RANK", "1"}})).has_value());
  EXPECT_FALSE(launched_rank(env_of({{"SLURM_NTASKS", "4"}})).has_value());
}

TEST(LaunchedRank, EachLauncherIsRead) {
  const std::optional<LaunchedRank> ompi = launched_rank(
      env_of({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}));
  ASSERT_TRUE(ompi.has_value());
  EXPECT_EQ(ompi->rank, 3);
  EXPECT_EQ(ompi->size, 8);
  EXPECT_EQ(ompi->local_rank, 3);
  EXPECT_EQ(ompi->launcher, "Open MPI");

  const std::optional<LaunchedRank> slurm =
      launched_rank(env_of({{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}}));
  ASSERT_TRUE(slurm.has_value());
  EXPECT_EQ(slurm->launcher, "Slurm");
  EXPECT_EQ(slurm->rank, 9);
  EXPECT_EQ(slurm->local_rank, 1);

  const std::optional<LaunchedRank> torch = launched_rank(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}));
  ASSERT_TRUE(torch.has_value());
  EXPECT_EQ(torch->launcher, "RANK/WORLD_SIZE");
  EXPECT_EQ(torch->local_rank, -1);
}

TEST(LaunchedRank, OpenMpiWinsOverTheGenericNames) {
  const std::optional<LaunchedRank> r = launched_rank(
      env_of({{"RANK", "5"}, {"WORLD_SIZE", "6"}, {"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}}));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->rank, 1);
  EXPECT_EQ(r->size, 2);
}

TEST(LaunchedRank, BadValuesNameTheVariable) {
  const auto key_of = [](const std::map<std::string, std::string>& vars) -> std::string {
    try {
      static_cast<void>(launched_rank(env_of(vars)));
    } catch (const sim::ConfigError& e) {
      return e.key() + "=" + e.value();
    }
    return "accepted";
  };
  EXPECT_EQ(key_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}), "RANK=x");
  EXPECT_EQ(key_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK=2");
  EXPECT_EQ(key_of({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}), "RANK=-1");
  EXPECT_EQ(key_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}), "WORLD_SIZE=0");
  EXPECT_EQ(key_of({{"RANK", "0"}, {"WORLD_SIZE", "2 "}}), "WORLD_SIZE=2 ");
  EXPECT_EQ(key_of({{"RANK", "0"}, {"WORLD_SIZE", "99999999999"}}), "WORLD_SIZE=99999999999");
  EXPECT_EQ(key_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "a"}}), "SLURM_LOCALID=a");
}

TEST(GpuOf, LocalRankPicksTheGpuAndMoreProcessesThanGpusIsAnError) {
  LaunchedRank r;
  r.rank = 13;
  r.size = 16;
  r.local_rank = 5;
  EXPECT_EQ(gpu_of(r, 8), 5);
  try {
    static_cast<void>(gpu_of(r, 4));
    ADD_FAILURE() << "local rank 5 accepted on 4 GPUs";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "cluster.gpus");
    EXPECT_NE(std::string(e.what()).find("at most 4 processes"), std::string::npos) << e.what();
  }
  r.local_rank = -1;  // no local rank given: round robin by global rank
  EXPECT_EQ(gpu_of(r, 8), 5);
  EXPECT_THROW(static_cast<void>(gpu_of(r, 0)), sim::ConfigError);
}

}  // namespace
}  // namespace megasim::backend
