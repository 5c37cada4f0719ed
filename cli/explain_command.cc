// `megasim explain [A.toml [B.toml]] [--set K=V ...] [--a K=V ...] [--b K=V ...] [--seed N]
// [--json]`: the MFU difference between two simulated runs as a waterfall over the breakdown's
// mechanisms and the production cluster's (stragglers, ECMP collisions, host overheads)
// (scenarios/studies/explain_study.h). B is A's file when not given; --set applies to both, --a and
// --b to one, so `megasim explain S.toml --a cluster.gpus=256 --b cluster.gpus=12288` explains what
// the same plan loses on the larger cluster.
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/scenario_options.h"
#include "scenarios/studies/explain_study.h"

namespace megasim::cli {
namespace {

struct ExplainOptions {
  std::string file_a;
  std::string file_b;
  std::vector<std::string> both;
  std::vector<std::string> only_a;
  std::vector<std::string> only_b;
  std::optional<std::int64_t> seed;
  bool json = false;
};

scenarios::Scenario explain_side(const ExplainOptions& o, const std::string& file,
                                 const std::vector<std::string>& only) {
  ScenarioOptions s;
  s.file = file;
  s.overrides = o.both;
  s.overrides.insert(s.overrides.end(), only.begin(), only.end());
  s.seed = o.seed;
  return resolve_scenario(s);
}

}  // namespace

Action register_explain(CLI::App& app) {
  auto o = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand("explain",
                                     "why two runs differ in MFU: a waterfall over compute, exposed TP/PP/DP, bubble, "
                                     "waiting, stragglers, collisions and host overheads");
  cmd->add_option("a", o->file_a, "scenario A (default: the built-in MegaScale defaults)");
  cmd->add_option("b", o->file_b, "scenario B (default: A's)");
  cmd->add_option("--set", o->both, "override a key of both runs: section.key=value (repeatable)");
  cmd->add_option("--a", o->only_a, "override a key of run A only (repeatable)");
  cmd->add_option("--b", o->only_b, "override a key of run B only (repeatable)");
  cmd->add_option("--seed", o->seed, "master random seed of both runs (same as --set simulation.seed=N)");
  cmd->add_flag("--json", o->json, "print the waterfall as JSON");
  return [cmd, o] {
    if (!cmd->parsed()) return;
    const scenarios::Scenario a = explain_side(*o, o->file_a, o->only_a);
    const scenarios::Scenario b = explain_side(*o, o->file_b.empty() ? o->file_a : o->file_b, o->only_b);
    const scenarios::ExplainReport report = scenarios::run_explain_study(a, b);
    std::cout << (o->json ? scenarios::to_json(report) : scenarios::to_text(report)) << std::flush;
  };
}

}  // namespace megasim::cli
