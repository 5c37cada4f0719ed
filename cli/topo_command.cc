#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/scenario_options.h"
#include "scenarios/topology_report.h"
#include "topology/summary.h"
#include "topology/topology.h"

namespace megasim::cli {
namespace {

struct TopoOptions {
  ScenarioOptions scenario;
  std::optional<std::int64_t> gpus;
  bool json = false;
  std::string graph_json;
  std::string graph_dot;
};

void run_topo(const TopoOptions& o) {
  scenarios::Scenario s = resolve_scenario(o.scenario);
  if (o.gpus) s.cluster.gpus = *o.gpus;
  scenarios::validate(s);
  const topo::Topology topology = topo::Topology::build(scenarios::effective_cluster(s));
  const topo::TopologySummary summary = topo::summarize(topology);
  // Render everything before writing anything, so an error leaves no partial output.
  std::string graph_json, graph_dot;
  if (!o.graph_json.empty()) {
    std::ostringstream out;
    topo::write_json(topology, out);
    graph_json = out.str();
  }
  if (!o.graph_dot.empty()) {
    std::ostringstream out;
    topo::write_graphviz(topology, out);
    graph_dot = out.str();
  }
  if (!graph_json.empty()) write_file(o.graph_json, graph_json, "--write-json");
  if (!graph_dot.empty()) write_file(o.graph_dot, graph_dot, "--write-dot");
  std::cout << (o.json ? scenarios::to_json(summary) : scenarios::to_text(summary));
}

}  // namespace

Action register_topo(CLI::App& app) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* cmd = app.add_subcommand("topo", "build the cluster fabric and print what was built");
  add_scenario_options(*cmd, options->scenario);
  cmd->add_option("--gpus", options->gpus, "cluster size in GPUs (same as --set cluster.gpus=N)")
      ->check(integer_in(1, kMaxGpusOption));
  cmd->add_flag("--json", options->json, "print the summary as JSON");
  cmd->add_option("--write-json", options->graph_json, "write the whole graph (nodes and links) as JSON to FILE");
  cmd->add_option("--write-dot", options->graph_dot, "write the graph as GraphViz dot to FILE (small clusters)");
  return [cmd, options] {
    if (cmd->parsed()) run_topo(*options);
  };
}

}  // namespace megasim::cli
