#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/progress_bar.h"
#include "cli/scenario_options.h"
#include "scenarios/config/output_files.h"
#include "scenarios/studies/sweep/sweep_study.h"
#include "sim/error.h"

namespace megasim::cli {
namespace {

struct SweepCommandOptions {
  ScenarioOptions scenario;
  std::vector<std::int64_t> gpus;
  std::vector<std::string> vary;
  std::string csv;
  std::size_t top = 0;
  bool json = false;
  unsigned threads = 0;
  std::int64_t max_micro_batch = 0;
  std::size_t confirm_top = scenarios::SweepOptions::kDefaultConfirmTop;
  bool full = false;
};

scenarios::SweepOptions sweep_options(const SweepCommandOptions& o) {
  scenarios::SweepOptions out;
  out.max_micro_batch_size = o.max_micro_batch;
  // The rows printed are certified: --top raises the confirmation to them.
  out.confirm_top = o.full ? 0 : std::max(o.confirm_top, o.top);
  if (!o.gpus.empty()) {
    std::string list;
    for (const std::int64_t g : o.gpus) list += (list.empty() ? "" : ",") + std::to_string(g);
    out.vary.push_back(scenarios::parse_sweep_axis("cluster.gpus=" + list));
  }
  for (const std::string& spec : o.vary) out.vary.push_back(scenarios::parse_sweep_axis(spec));
  // A --set of a swept key would be overridden at every point of the sweep.
  for (const scenarios::SweepAxis& axis : out.vary) {
    for (const std::string& assignment : o.scenario.overrides) {
      if (!assignment.starts_with(axis.key + "=")) continue;
      throw sim::ConfigError("--set", assignment,
                             "no --set of a swept key (" + axis.key + " takes the values of " +
                                 (axis.key == "cluster.gpus" && !o.gpus.empty() ? "--gpus" : "--vary") + ")");
    }
  }
  return out;
}

void run_sweep(const SweepCommandOptions& o) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  const scenarios::SweepOptions options = sweep_options(o);
  // Before the sweep runs, not after: a --csv path that cannot take the file is refused at once.
  if (!o.csv.empty()) static_cast<void>(scenarios::checked_output_file(o.csv, "--csv"));
  scenarios::SweepReport report;
  {
    ProgressBar bar;
    report = scenarios::run_sweep_study(s, options, o.threads,
                                        [&bar](std::string_view phase, std::size_t done, std::size_t total) {
                                          bar.update(fmt::format("plans {}", phase), done, total);
                                        });
  }
  if (!o.csv.empty()) scenarios::write_output_file(o.csv, scenarios::to_csv(report), "--csv");
  std::cout << (o.json ? scenarios::to_json(report, o.top) : scenarios::to_text(report, o.top)) << std::flush;
  if (!o.json) std::cerr << "swept in " << report.wall_time_s << " s\n";
}

}  // namespace

Action register_sweep(CLI::App& app) {
  auto o = std::make_shared<SweepCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "simulate every valid TP/PP/virtual-stage/micro-batch plan (and any swept keys); rank by tokens/s");
  add_scenario_options(*cmd, o->scenario);
  cmd->add_option("--gpus", o->gpus, "cluster sizes to sweep (same as --vary cluster.gpus=N1,N2,...)")
      ->expected(1, -1)
      ->check(integer_in(1, kMaxGpusOption));
  cmd->add_option("--vary", o->vary,
                  "sweep a key: section.key=v1,v2,... or, for integers, a..b (a, 2a, 4a, ... and b) or a..b:s "
                  "(a, a+s, ... up to b); repeatable, crossed with each other and the plans")
      ->type_name("KEY=VALUES");
  cmd->add_option("--csv", o->csv, "write every candidate, simulated or rejected with its reason, as CSV");
  cmd->add_option("--top", o->top, "print only the K fastest plans (0: all)")
      ->capture_default_str()
      ->check(integer_in(0, 1'000'000));
  cmd->add_flag("--json", o->json, "print one JSON object instead of the table");
  cmd->add_option("--threads", o->threads,
                  "simulations run at once (0: one per hardware thread; results do not change)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxThreadsOption));
  cmd->add_option("--confirm-top", o->confirm_top,
                  "simulate in full, every replica and flow, every plan that could be among the K fastest (of each "
                  "point of --vary); the rest keep their one-replica screen, an upper bound (at least --top)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& text) {
            return text.find_first_not_of("0123456789") == std::string::npos &&
                           text.find_first_not_of('0') != std::string::npos
                       ? std::string()
                       : text + ": want a whole number >= 1 (--full simulates every plan in full)";
          },
          "K >= 1"))
      ->check(integer_in(1, 1'000'000));
  cmd->add_flag("--full", o->full, "simulate every plan in full (no screen)");
  cmd->add_option("--max-micro-batch", o->max_micro_batch,
                  "largest micro-batch size tried (powers of two from 1; 0: up to the global batch)")
      ->capture_default_str()
      ->check(integer_in(0, 16'777'216));
  return [cmd, o] {
    if (!cmd->parsed()) return;
    refuse_inert(*cmd, "--confirm-top", !o->full, "with --full (every plan is simulated in full: none to confirm)");
    run_sweep(*o);
  };
}

}  // namespace megasim::cli
