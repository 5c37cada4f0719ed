// The registry of backends (backend/registry.h): what a --backend value names, and what each
// backend says about itself.
#include "backend/registry.h"

#include "backend/backend.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "models/memory.h"
#include "sim/error.h"

namespace megasim::backend {
namespace {

// The key and the message of the refusal, or "accepted".
std::string refusal(std::string_view name, Capability what) {
  try {
    static_cast<void>(backend_for(name, what));
  } catch (const sim::ConfigError& e) {
    return e.key() + ": " + e.what();
  }
  return "accepted";
}

TEST(Registry, NamesTheBackendThatCanDoWhatTheCommandAsks) {
  EXPECT_EQ(backend_for("sim", Capability::kRun), BackendId::kSim);
  // The simulator measures nothing: it cannot calibrate or validate, and says which can.
  const std::string sim = refusal("sim", Capability::kCalibrate);
  EXPECT_EQ(sim.rfind("--backend: ", 0), 0u) << sim;
  EXPECT_NE(sim.find("cpu ("), std::string::npos) << sim;
  EXPECT_NE(sim.find("the sim backend cannot calibrate"), std::string::npos) << sim;
  const std::string unknown = refusal("tpu", Capability::kRun);
  EXPECT_NE(unknown.find("sim ("), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("cpu ("), std::string::npos) << unknown;
}

// MEGASIM_HAS_MPI: set on this test by tests/backend/CMakeLists.txt when the cpu backend is built.
TEST(Registry, TheCpuBackendIsThereExactlyWhenItWasBuilt) {
#ifdef MEGASIM_HAS_MPI
  EXPECT_EQ(backend_for("cpu", Capability::kRun), BackendId::kCpu);
  EXPECT_EQ(backend_for("cpu", Capability::kCalibrate), BackendId::kCpu);
  EXPECT_EQ(backend_for("cpu", Capability::kValidate), BackendId::kCpu);
#else
  const std::string cpu = refusal("cpu", Capability::kRun);
  EXPECT_NE(cpu.find("built without the cpu backend"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("MPI"), std::string::npos) << cpu;
#endif
}

TEST(Registry, TheCudaBackendIsThereExactlyWhenItWasBuilt) {
#ifdef MEGASIM_HAS_CUDA
  EXPECT_EQ(backend_for("cuda", Capability::kValidate), BackendId::kCuda);
#else
  const std::string cuda = refusal("cuda", Capability::kRun);
  EXPECT_NE(cuda.find("built without the cuda backend"), std::string::npos) << cuda;
#endif
}

TEST(Registry, DescribesEveryKnownBackend) {
  const std::vector<BackendDescription> all = describe_backends();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].name, "sim");
  EXPECT_EQ(all[1].name, "cpu");
  EXPECT_EQ(all[2].name, "cuda");
  for (const BackendDescription& d : all) {
    EXPECT_EQ(d.built, d.not_built.empty()) << d.name;
    EXPECT_FALSE(d.summary.empty()) << d.name;
    EXPECT_FALSE(d.capabilities.empty()) << d.name;
  }
  EXPECT_TRUE(all[0].built);
#ifdef MEGASIM_HAS_MPI
  EXPECT_TRUE(all[1].built);
  EXPECT_EQ(all[1].mpi.rfind("MPI ", 0), 0u) << all[1].mpi;
  EXPECT_GE(all[1].hardware_threads, 1);
#else
  EXPECT_FALSE(all[1].built);
#endif
}

TEST(Registry, MakesTheRealBackendsAndRefusesWhatTheyCannotDo) {
#ifndef MEGASIM_HAS_MPI
  EXPECT_THROW(make_backend(BackendId::kCpu), sim::ConfigError);
  GTEST_SKIP() << "the cpu backend is not built (MEGASIM_WITH_MPI)";
#endif
  const std::unique_ptr<Backend> cpu = make_backend(BackendId::kCpu);
  EXPECT_EQ(cpu->id(), BackendId::kCpu);
  cpu->require_machine();  // a CPU is always there
  // Shard mode is the cuda backend's alone: the cpu backend refuses --stage before running anything.
  try {
    static_cast<void>(cpu->run_stage(models::Workload{}, 0, 0, 1));
    ADD_FAILURE() << "the cpu backend ran a stage";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--stage");
  }
  // Measuring a GPU is the cuda backend's: the cpu backend refuses it before anything is measured.
  try {
    cpu->probe_gpu(ProbeOptions{}, [](const GpuProbe&) { ADD_FAILURE() << "probed"; });
    ADD_FAILURE() << "the cpu backend probed a GPU";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--backend");
  }
  // A job whose rank needs more than this machine's memory is refused before it starts; one that
  // needs a byte is not (a one-rank job: the machine's whole memory is the rank's).
  models::Workload one_rank;
  one_rank.plan.world_size = 1;
  const auto needing = [](double bytes) {
    models::MemoryEstimate m;
    m.stages.resize(1);
    m.stages[0].activations_bytes = static_cast<std::int64_t>(bytes);
    return m;
  };
  cpu->require_job_fits(one_rank, needing(1));
  const double machine_bytes =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  EXPECT_THROW(cpu->require_job_fits(one_rank, needing(machine_bytes * 1.01)), sim::ConfigError);
  // The simulator is not run through this interface.
  try {
    static_cast<void>(make_backend(BackendId::kSim));
    ADD_FAILURE() << "made a simulator backend";
  } catch (const sim::ConfigError& e) {
    EXPECT_EQ(e.key(), "--backend");
  }
}

}  // namespace
}  // namespace megasim::backend
