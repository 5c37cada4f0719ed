// `megasim backends [--json]`: the backends built into this megasim and what each can see of the
// machine, as the registry describes them (backend/registry.h). The simulator and the cpu backend
// (Eigen + MPI) are always built; the CUDA backend when CUDA and NCCL were found at configure time.
#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

#include "backend/registry.h"
#include "cli/commands.h"
#include "scenarios/config/json_writer.h"

namespace megasim::cli {
namespace {

struct BackendsOptions {
  bool json = false;
};

// One line per backend (padded names), its GPUs indented below it.
std::string text_of(const backend::BackendDescription& d) {
  std::string name = d.name;
  name.resize(std::max<std::size_t>(name.size() + 1, 7), ' ');
  if (!d.built) return "  " + name + "not built (" + d.not_built + ")\n";
  std::string line = "  " + name + d.summary + " (" + d.commands + ")";
  if (!d.nccl.empty()) line += "; NCCL " + d.nccl + "; " + std::to_string(d.gpus.size()) + " GPU(s) visible";
  if (d.hardware_threads > 0) line += "; " + std::to_string(d.hardware_threads) + " hardware threads";
  line += "\n";
  for (const backend::GpuDescription& g : d.gpus) {
    line += "         " + std::to_string(g.ordinal) + ": " + g.name + ", " + std::to_string(g.multiprocessors) +
            " SMs, compute capability " + std::to_string(g.compute_capability_major) + "." +
            std::to_string(g.compute_capability_minor) + "\n";
  }
  return line;
}

void json_of(const backend::BackendDescription& d, scenarios::JsonWriter& j) {
  j.begin_object().field("name", d.name).field("built", d.built);
  if (!d.built) {
    j.end_object();
    return;
  }
  j.field("commands", d.commands);
  if (!d.nccl.empty()) {
    j.field("nccl", d.nccl);
    j.key("gpus").begin_array();
    for (const backend::GpuDescription& g : d.gpus) {
      j.begin_object()
          .field("ordinal", g.ordinal)
          .field("name", g.name)
          .field("memory_gbytes", g.memory_gbytes)
          .field("multiprocessors", g.multiprocessors)
          .end_object();
    }
    j.end_array();
  }
  if (!d.mpi.empty()) j.field("mpi", d.mpi).field("hardware_threads", d.hardware_threads);
  j.end_object();
}

void run_backends(const BackendsOptions& o) {
  scenarios::JsonWriter j;
  std::string text = "backends built into this megasim:\n";
  j.begin_object().key("backends").begin_array();
  for (const backend::BackendDescription& d : backend::describe_backends()) {
    text += text_of(d);
    json_of(d, j);
  }
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
