#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/scenario_options.h"
#include "scenarios/config/units.h"
#include "scenarios/studies/collective_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct CollectiveOptions {
  ScenarioOptions scenario;
  std::string op = "all_reduce";
  std::string bytes = "1GiB";
  std::optional<std::int64_t> gpus;
  std::string algo = "ring";
  std::optional<std::string> routing;
  std::optional<std::string> group;
  std::optional<std::int64_t> tp;
  std::optional<std::int64_t> pp;
  bool json = false;
  bool wall_time = false;
};

std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

void run_collective(const CollectiveOptions& o) {
  scenarios::Scenario s = resolve_scenario(o.scenario);
  scenarios::CollectiveRequest request;
  request.op = models::parse_collective_op(o.op, "--op");
  request.algorithm = models::parse_collective_algorithm(o.algo, "--algo");
  request.bytes = scenarios::parse_bytes(o.bytes, "--bytes");
  if (o.routing) apply_option(s, "--routing", "fabric.routing", *o.routing);
  if (o.tp) s.plan.tensor_model_parallel_size = *o.tp;
  if (o.pp) s.plan.pipeline_model_parallel_size = *o.pp;
  if (o.group) request.scope = scenarios::parse_group_scope(*o.group, "--group");
  if (o.gpus) {
    if (*o.gpus < 1) throw sim::ConfigError("--gpus", std::to_string(*o.gpus), "an integer >= 1");
    // The cluster is the smallest whole number of servers holding the GPUs asked for.
    s.cluster.gpus = round_up(*o.gpus, std::max<std::int64_t>(1, s.cluster.gpus_per_server));
    if (request.scope == scenarios::GroupScope::kSingle) request.group_gpus = *o.gpus;
  }
  scenarios::validate(s);
  const scenarios::CollectiveReport report = scenarios::run_collective_study(s, request);
  std::cout << (o.json ? scenarios::to_json(report, o.wall_time) : scenarios::to_text(report));
}

}  // namespace

Action register_collective(CLI::App& app) {
  auto o = std::make_shared<CollectiveOptions>();
  CLI::App* cmd = app.add_subcommand("collective", "simulate one NCCL collective on the fabric (like nccl-tests)");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--op", o->op, "all_reduce, reduce_scatter, all_gather, broadcast, all_to_all or send_recv")
      ->capture_default_str();
  cmd->add_option("--bytes", o->bytes, "size in the nccl-tests sense: 1048576, 64MiB, 1GiB, 4GB")
      ->capture_default_str();
  cmd->add_option("--gpus", o->gpus,
                  "cluster size in GPUs (rounded up to whole servers); without --group also the group size")
      ->check(integer_in(1, kMaxGpusOption));
  cmd->add_option("--algo", o->algo, "ring or tree")->capture_default_str();
  cmd->add_option("--routing", o->routing, "ecmp, spray or adaptive (default: fabric.routing)");
  cmd->add_option("--group", o->group, "run every tp, dp or pp group of the plan at once and report the slowest");
  cmd->add_option("--tp", o->tp, "tensor-parallel size for --group (plan.tensor_model_parallel_size)")
      ->check(integer_in(1, 4096));
  cmd->add_option("--pp", o->pp, "pipeline-parallel size for --group (plan.pipeline_model_parallel_size)")
      ->check(integer_in(1, 10'000));
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->add_flag("--wall-time", o->wall_time, "with --json: include the host time spent simulating");
  return [cmd, o] {
    if (!cmd->parsed()) return;
    refuse_inert(*cmd, "--wall-time", o->json, "without --json (only the JSON report has the host time)");
    const std::string no_group = "without --group (a single collective over --gpus has no parallel plan)";
    refuse_inert(*cmd, "--tp", o->group.has_value(), no_group);
    refuse_inert(*cmd, "--pp", o->group.has_value(), no_group);
    run_collective(*o);
  };
}

}  // namespace megasim::cli
