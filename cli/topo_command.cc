#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/scenario_options.h"
#include "scenarios/config/output_files.h"
#include "scenarios/report/topology_report.h"
#include "topology/summary.h"
#include "topology/topology.h"

namespace megasim::cli {
namespace {

struct TopoOptions {
  ScenarioOptions scenario;
  bool json = false;
  std::string graph_json;
  std::string graph_dot;
};

void run_topo(const TopoOptions& o) {
  scenarios::Scenario s = resolve_scenario(o.scenario);
  scenarios::validate(s);
  // Before the cluster is built: a path that cannot take its file is refused at once.
  if (!o.graph_json.empty()) static_cast<void>(scenarios::checked_output_file(o.graph_json, "--write-json"));
  if (!o.graph_dot.empty()) static_cast<void>(scenarios::checked_output_file(o.graph_dot, "--write-dot"));
  const topo::Topology topology = topo::Topology::build(scenarios::effective_cluster(s));
  const topo::TopologySummary summary = topo::summarize(topology);
  // Both files or neither (scenarios/config/output_files.h), streamed.
  if (!o.graph_json.empty() || !o.graph_dot.empty()) {
    scenarios::OutputFiles files;
    if (!o.graph_json.empty()) {
      files.add(o.graph_json, "--write-json", [&](std::ostream& out) { topo::write_json(topology, out); });
    }
    if (!o.graph_dot.empty()) {
      files.add(o.graph_dot, "--write-dot", [&](std::ostream& out) { topo::write_graphviz(topology, out); });
    }
    files.commit();
  }
  std::cout << (o.json ? scenarios::to_json(summary) : scenarios::to_text(summary));
}

}  // namespace

Action register_topo(CLI::App& app) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* cmd = app.add_subcommand("topo", "build the cluster fabric and print what was built");
  add_scenario_options(*cmd, options->scenario);
  add_gpus_option(*cmd, options->scenario);
  cmd->add_flag("--json", options->json, "print the summary as JSON");
  cmd->add_option("--write-json", options->graph_json, "write the whole graph (nodes and links) as JSON to FILE");
  cmd->add_option("--write-dot", options->graph_dot, "write the graph as GraphViz dot to FILE (small clusters)");
  return [cmd, options] {
    if (cmd->parsed()) run_topo(*options);
  };
}

}  // namespace megasim::cli
