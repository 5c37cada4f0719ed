// `megasim backends [--json]`: the backends built into this megasim and what each can see of the
// machine (issue: real execution backends). The simulator and the cpu backend (Eigen + MPI) are always
// built; the CUDA backend when CUDA and NCCL were found at configure time.
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <mpi.h>

#include "cli/commands.h"
#include "scenarios/json_writer.h"

#ifdef MEGASIM_HAS_CUDA
#include "backend/cuda/device_info.h"
#endif

namespace megasim::cli {
namespace {

struct BackendsOptions {
  bool json = false;
};

void run_backends(const BackendsOptions& o) {
  scenarios::JsonWriter j;
  std::string text = "backends built into this megasim:\n  sim    the flow-level cluster simulator\n";
  j.begin_object().key("backends").begin_array();
  j.begin_object()
      .field("name", "sim")
      .field("built", true)
      .field("commands", "run, plan, collective, topo")
      .end_object();
#ifdef MEGASIM_HAS_CUDA
  const std::vector<backend::cuda::GpuInfo> gpus = backend::cuda::visible_gpus();
  std::string nccl;
  try {
    nccl = backend::cuda::nccl_version();
  } catch (const backend::cuda::CudaError& e) {
    nccl = std::string("not loadable: ") + e.what();
  }
  text += "  cuda   CUDA + NCCL (calibrate, validate, run); NCCL " + nccl + "; " + std::to_string(gpus.size()) +
          " GPU(s) visible\n";
  j.begin_object()
      .field("name", "cuda")
      .field("built", true)
      .field("commands", "calibrate, validate, run")
      .field("nccl", nccl);
  j.key("gpus").begin_array();
  for (const backend::cuda::GpuInfo& g : gpus) {
    text += "         " + std::to_string(g.ordinal) + ": " + g.name + ", " + std::to_string(g.multiprocessors) +
            " SMs, compute capability " + std::to_string(g.compute_capability_major) + "." +
            std::to_string(g.compute_capability_minor) + "\n";
    j.begin_object()
        .field("ordinal", g.ordinal)
        .field("name", g.name)
        .field("memory_gbytes", g.memory_gbytes)
        .field("multiprocessors", g.multiprocessors)
        .end_object();
  }
  j.end_array().end_object();
#else
  text += "  cuda   not built (configured with MEGASIM_WITH_CUDA=OFF, or CUDA and NCCL were not found)\n";
  j.begin_object().field("name", "cuda").field("built", false).end_object();
#endif
  int mpi_major = 0;
  int mpi_minor = 0;
  MPI_Get_version(&mpi_major, &mpi_minor);  // callable before MPI_Init
  const std::string mpi = "MPI " + std::to_string(mpi_major) + "." + std::to_string(mpi_minor);
  text += "  cpu    Eigen float32 kernels + " + mpi + " between processes (calibrate, validate); " +
          std::to_string(std::thread::hardware_concurrency()) + " hardware threads\n";
  j.begin_object()
      .field("name", "cpu")
      .field("built", true)
      .field("commands", "calibrate, validate")
      .field("mpi", mpi)
      .field("hardware_threads", static_cast<std::int64_t>(std::thread::hardware_concurrency()))
      .end_object();
  j.end_array().end_object();
  std::cout << (o.json ? j.str() + "\n" : text);
}

}  // namespace

Action register_backends(CLI::App& app) {
  auto o = std::make_shared<BackendsOptions>();
  CLI::App* cmd = app.add_subcommand("backends", "list the backends built into this megasim and the GPUs they see");
  cmd->add_flag("--json", o->json, "print one JSON object");
  return [cmd, o] {
    if (cmd->parsed()) run_backends(*o);
  };
}

}  // namespace megasim::cli
