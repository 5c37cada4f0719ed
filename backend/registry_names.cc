#include "backend/registry.h"

#include <algorithm>
#include <utility>

#include "sim/error.h"

namespace megasim::backend {
namespace {

std::string_view capability_name(Capability c) {
  switch (c) {
    case Capability::kRun:
      return "run";
    case Capability::kCalibrate:
      return "calibrate";
    case Capability::kValidate:
      return "validate";
  }
  return "?";
}

BackendDescription entry(BackendId id, std::string name, std::string label, std::string summary,
                         std::vector<Capability> capabilities, std::string commands) {
  BackendDescription d;
  d.id = id;
  d.name = std::move(name);
  d.built = true;
  d.label = std::move(label);
  d.summary = std::move(summary);
  d.capabilities = std::move(capabilities);
  d.commands = std::move(commands);
  return d;
}

bool can(const BackendDescription& d, Capability what) {
  return std::find(d.capabilities.begin(), d.capabilities.end(), what) != d.capabilities.end();
}

// "a (label), b (label) or c (label)".
std::string listed(const std::vector<const BackendDescription*>& backends) {
  std::string out;
  for (std::size_t i = 0; i < backends.size(); ++i) {
    if (i > 0) out += i + 1 == backends.size() ? " or " : ", ";
    out += backends[i]->name + " (" + backends[i]->label + ")";
  }
  return out;
}

}  // namespace

std::vector<BackendDescription> known_backends() {
  constexpr Capability kRun = Capability::kRun, kCalibrate = Capability::kCalibrate, kValidate = Capability::kValidate;
  std::vector<BackendDescription> all = {
      entry(BackendId::kSim, "sim", "the simulator", "the flow-level cluster simulator", {kRun},
            "run, plan, collective, topo"),
      entry(BackendId::kCpu, "cpu", "Eigen + MPI", "Eigen float32 kernels + MPI between processes",
            {kRun, kCalibrate, kValidate}, "run, calibrate, validate"),
      entry(BackendId::kCuda, "cuda", "CUDA + NCCL", "CUDA + NCCL", {kRun, kCalibrate, kValidate},
            "run, calibrate, validate"),
  };
  // MEGASIM_CPU_BUILT, MEGASIM_CUDA_BUILT: set on this file by backend/CMakeLists.txt when the cpu
  // backend (with MPI) and the CUDA backend are built.
#ifndef MEGASIM_CPU_BUILT
  all[1].built = false;
  all[1].not_built = "configured with MEGASIM_WITH_MPI=OFF, or Open MPI was not found";
#endif
#ifndef MEGASIM_CUDA_BUILT
  all[2].built = false;
  all[2].not_built = "configured with MEGASIM_WITH_CUDA=OFF, or CUDA and NCCL were not found";
#endif
  return all;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  for (const BackendDescription& d : known_backends()) {
    if (d.built) names.push_back(d.name);
  }
  return names;
}

BackendId backend_for(std::string_view name, Capability what) {
  const std::vector<BackendDescription> all = known_backends();  // no probing of GPUs or NCCL
  std::vector<const BackendDescription*> known_that_can;
  std::vector<const BackendDescription*> built_that_can;
  const BackendDescription* named = nullptr;
  for (const BackendDescription& d : all) {
    if (d.name == name) named = &d;
    if (!can(d, what)) continue;
    known_that_can.push_back(&d);
    if (d.built) built_that_can.push_back(&d);
  }
  if (named != nullptr && named->built && can(*named, what)) return named->id;
  const std::string action(capability_name(what));
  if (named == nullptr) throw sim::ConfigError("--backend", std::string(name), listed(known_that_can));
  // What would be valid: the backends of this build that can, or (none) those that could, not built.
  const std::string valid =
      built_that_can.empty()
          ? listed(known_that_can) + ", which this megasim was built without (see `megasim backends`)"
          : listed(built_that_can);
  if (!named->built) {
    throw sim::ConfigError("--backend", std::string(name),
                           valid + ": this megasim was built without the " + named->name + " backend (" +
                               named->not_built + "; see `megasim backends`)");
  }
  throw sim::ConfigError("--backend", std::string(name), valid + ": the " + named->name + " backend cannot " + action);
}

}  // namespace megasim::backend
