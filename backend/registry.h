// The backends of this build and what each says about itself (DESIGN.md "Layers and folders"): the
// only place that knows which backends were built (the one build-option #ifdef of the backends). A
// command turns its --backend value into a BackendId with backend_for, and `megasim backends` prints
// describe_backends().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace megasim::backend {

enum class BackendId { kSim, kCpu, kCuda };

// What a command asks of a backend.
enum class Capability { kRun, kCalibrate, kValidate };

struct GpuDescription {
  int ordinal = 0;
  std::string name;
  double memory_gbytes = 0;
  int multiprocessors = 0;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
};

struct BackendDescription {
  BackendId id = BackendId::kSim;
  std::string name;     // as --backend takes it: "sim", "cpu", "cuda"
  bool built = false;   // false: this megasim was configured without it (why: not_built)
  std::string label;    // what it is in a few words, for error messages: "the simulator", "Eigen + MPI"
  std::string summary;  // what it is, one line, with what it sees of this machine
  std::vector<Capability> capabilities;
  std::string commands;   // the commands that use it, as the user types them
  std::string not_built;  // why it is missing, when !built
  // What it sees of this machine: the cpu backend's MPI version and hardware threads; the cuda
  // backend's NCCL version ("not loadable: ..." when libnccl cannot be opened) and visible GPUs.
  std::string mpi;
  std::int64_t hardware_threads = 0;
  std::string nccl;
  std::vector<GpuDescription> gpus;
};

// Every backend megasim knows, built or not, with what is fixed when megasim is built (no probing
// of the machine): sim, cpu, cuda. In megasim_backend, so that the Python module has it without MPI.
std::vector<BackendDescription> known_backends();

// The names of the backends this megasim was built with: sim, cpu and, when built, cuda.
std::vector<std::string> available_backends();

// known_backends() with what each sees of this machine (the MPI version, hardware threads, NCCL's
// version and the visible GPUs), in the same order.
// In megasim_backend_registry.
std::vector<BackendDescription> describe_backends();

// The backend `name` names, when this build has it and it can do `what` (known_backends(), no probing); otherwise
// throws sim::ConfigError("--backend", name, ...): for an unknown name, every known backend that can do it
// ("sim (the simulator), cpu (Eigen + MPI) or cuda (CUDA + NCCL)": the same in every build, as
// Python's megasim.run says it); for a known one, those of this build that can, and why it cannot
// (not built, or not a backend that does that).
BackendId backend_for(std::string_view name, Capability what);

}  // namespace megasim::backend
