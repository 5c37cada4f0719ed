#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/mpi/mpi_launch.h"
#include "sim/error.h"

namespace megasim::backend::mpi {
namespace {

// Clears the launcher variables (and MEGASIM_MPIRUN) for one test and puts them back afterwards,
// so the tests see a plain single-process start even when ctest itself runs under a launcher.
class ScopedLaunchEnvironment {
 public:
  ScopedLaunchEnvironment() {
    for (const char* name : kNames) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value == nullptr ? std::nullopt : std::optional<std::string>(value));
      unsetenv(name);
    }
  }
  ~ScopedLaunchEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  ScopedLaunchEnvironment(const ScopedLaunchEnvironment&) = delete;
  ScopedLaunchEnvironment& operator=(const ScopedLaunchEnvironment&) = delete;

 private:
  static constexpr std::array<const char*, 5> kNames = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS",
                                                        "MEGASIM_MPIRUN"};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

std::vector<std::string> command_for(int processes, std::vector<std::string> args) {
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return mpirun_command(processes, static_cast<int>(args.size()), argv.data());
}

TEST(MpiLaunchTest, NotStartedByLauncherWithoutItsVariables) {
  const ScopedLaunchEnvironment environment;
  EXPECT_FALSE(started_by_mpi_launcher());
}

TEST(MpiLaunchTest, EachLauncherVariableMarksALauncherStart) {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_NTASKS"}) {
    const ScopedLaunchEnvironment environment;
    setenv(name, "2", 1);
    EXPECT_TRUE(started_by_mpi_launcher()) << name;
  }
  const ScopedLaunchEnvironment environment;
  EXPECT_FALSE(started_by_mpi_launcher());
}

TEST(MpiLaunchTest, CommandRunsThisExecutableWithTheRemainingArgumentsInOrder) {
  const ScopedLaunchEnvironment environment;
  const std::vector<std::string> command = command_for(3, {"megasim", "calibrate", "--backend", "cpu"});
  ASSERT_FALSE(command.empty());
  EXPECT_EQ(command.front(), "mpirun");
  EXPECT_NE(std::find(command.begin(), command.end(), "--oversubscribe"), command.end());
  const auto np = std::find(command.begin(), command.end(), "-np");
  ASSERT_NE(np, command.end());
  ASSERT_NE(np + 1, command.end());
  EXPECT_EQ(*(np + 1), "3");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  ASSERT_GE(command.size(), 4U);
  const std::vector<std::string> tail(command.end() - 4, command.end());
  EXPECT_EQ(tail, (std::vector<std::string>{self, "calibrate", "--backend", "cpu"}));
}

// One rank per core, bound to it, when the ranks fit on the cores; unbound (the scheduler shares
// the cores) when they do not, since Open MPI refuses to bind two ranks to one core.
TEST(MpiLaunchTest, RanksAreBoundToCoresExactlyWhenTheyFit) {
  const std::vector<std::string> bound = {"--map-by", "core", "--bind-to", "core"};
  const std::vector<std::string> unbound = {"--bind-to", "none"};
  EXPECT_EQ(binding_arguments(1, 1), bound);
  EXPECT_EQ(binding_arguments(2, 2), bound);
  EXPECT_EQ(binding_arguments(2, 16), bound);
  EXPECT_EQ(binding_arguments(3, 2), unbound);
  EXPECT_EQ(binding_arguments(64, 16), unbound);
}

TEST(MpiLaunchTest, UsableCoresAreAtLeastOneAndAtMostTheHardwareThreads) {
  const int cores = usable_cores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(static_cast<unsigned>(cores), std::max(1U, std::thread::hardware_concurrency()));
}

TEST(MpiLaunchTest, CommandBindsAsTheMachinesCoresAllow) {
  const ScopedLaunchEnvironment environment;
  for (const int processes : {1, 2, 3, 64}) {
    const std::vector<std::string> command = command_for(processes, {"megasim"});
    const auto bind = std::find(command.begin(), command.end(), "--bind-to");
    ASSERT_NE(bind, command.end());
    ASSERT_NE(bind + 1, command.end());
    EXPECT_EQ(*(bind + 1), processes <= usable_cores() ? "core" : "none") << processes;
    EXPECT_EQ(std::count(command.begin(), command.end(), "--bind-to"), 1) << processes;
  }
}

TEST(MpiLaunchTest, CommandAllowsRootExactlyWhenRunningAsRoot) {
  const ScopedLaunchEnvironment environment;
  const std::vector<std::string> command = command_for(2, {"megasim"});
  const bool allows_root = std::find(command.begin(), command.end(), "--allow-run-as-root") != command.end();
  EXPECT_EQ(allows_root, geteuid() == 0);
}

TEST(MpiLaunchTest, CommandUsesMegasimMpirunWhenSet) {
  const ScopedLaunchEnvironment environment;
  setenv("MEGASIM_MPIRUN", "/opt/openmpi/bin/mpirun", 1);
  EXPECT_EQ(command_for(2, {"megasim"}).front(), "/opt/openmpi/bin/mpirun");
}

TEST(MpiLaunchTest, MissingMpirunIsAConfigErrorNamingTheBackend) {
  const ScopedLaunchEnvironment environment;
  setenv("MEGASIM_MPIRUN", "/nonexistent/megasim-test/mpirun", 1);
  std::string program = "megasim";
  std::array<char*, 2> argv = {program.data(), nullptr};
  try {
    exec_under_mpirun(2, 1, argv.data());
  } catch (const sim::ConfigError& error) {
    EXPECT_EQ(error.key(), "--backend");
    EXPECT_EQ(error.value(), "cpu");
    return;
  }
  FAIL() << "exec_under_mpirun returned without an error";
}

}  // namespace
}  // namespace megasim::backend::mpi
