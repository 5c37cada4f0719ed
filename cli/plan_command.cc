#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/scenario_options.h"
#include "scenarios/studies/plan_study.h"

namespace megasim::cli {
namespace {

struct PlanOptions {
  ScenarioOptions scenario;
  bool json = false;
};

void run_plan(const PlanOptions& o) {
  scenarios::Scenario s = resolve_scenario(o.scenario);
  const scenarios::PlanReport report = scenarios::run_plan_study(s);
  std::cout << (o.json ? scenarios::to_json(report) : scenarios::to_text(report));
  if (!report.fits) std::cerr << "megasim: warning: the plan does not fit in GPU memory\n";
}

}  // namespace

Action register_plan(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd =
      app.add_subcommand("plan", "resolve and check the parallel plan: sizes, memory per GPU per stage, FLOPs");
  add_scenario_options(*cmd, o->scenario);
  add_gpus_option(*cmd, o->scenario);
  cmd->add_flag("--json", o->json, "print one JSON object");
  return [cmd, o] {
    if (cmd->parsed()) run_plan(*o);
  };
}

}  // namespace megasim::cli
