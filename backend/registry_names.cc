#include "backend/registry.h"

#include <algorithm>

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

BackendDescription sim_backend() {
  BackendDescription d;
  d.id = BackendId::kSim;
  d.name = "sim";
  d.built = true;
  d.label = "the simulator";
  d.summary = "the flow-level cluster simulator";
  d.capabilities = {Capability::kRun};
  d.commands = "run, plan, collective, topo";
  return d;
}

BackendDescription cpu_backend() {
  BackendDescription d;
  d.id = BackendId::kCpu;
  d.name = "cpu";
  d.built = true;
  d.label = "Eigen + MPI";
  d.summary = "Eigen float32 kernels + MPI between processes";
  d.capabilities = {Capability::kRun, Capability::kCalibrate, Capability::kValidate};
  d.commands = "run, calibrate, validate";
  return d;
}

BackendDescription cuda_backend() {
  BackendDescription d;
  d.id = BackendId::kCuda;
  d.name = "cuda";
  d.label = "CUDA + NCCL";
  d.summary = "CUDA + NCCL";
  d.capabilities = {Capability::kRun, Capability::kCalibrate, Capability::kValidate};
  d.commands = "calibrate, validate, run";
  // MEGASIM_CUDA_BUILT: set on this file by backend/CMakeLists.txt when the CUDA backend is built.
#ifdef MEGASIM_CUDA_BUILT
  d.built = true;
#else
  d.not_built = "configured with MEGASIM_WITH_CUDA=OFF, or CUDA and NCCL were not found";
#endif
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
  return {sim_backend(), cpu_backend(), cuda_backend()};
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
  if (!named->built) {
    throw sim::ConfigError("--backend", std::string(name),
                           listed(built_that_can) + ": this megasim was built without the " + named->name +
                               " backend (" + named->not_built + "; see `megasim backends`)");
  }
  throw sim::ConfigError("--backend", std::string(name),
                         listed(built_that_can) + ": the " + named->name + " backend cannot " + action);
}

}  // namespace megasim::backend
