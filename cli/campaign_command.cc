#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/numeric_options.h"
#include "cli/option_checks.h"
#include "cli/scenario_options.h"
#include "scenarios/studies/campaign/campaign_report.h"
#include "scenarios/studies/campaign/campaign_study.h"

namespace megasim::cli {
namespace {

struct CampaignCommandOptions {
  ScenarioOptions scenario;
  scenarios::CampaignOptions campaign;
  bool json = false;
  std::size_t timeline_lines = 20;
};

void run_campaign(const CampaignCommandOptions& o) {
  const scenarios::Scenario s = resolve_scenario(o.scenario);
  const scenarios::CampaignReport report = scenarios::run_campaign_study(s, o.campaign);
  std::cout << (o.json ? scenarios::to_json(report) : scenarios::to_text(report, o.timeline_lines)) << std::flush;
  if (!o.json) std::cerr << "simulated in " << report.wall_time_s << " s\n";
}

}  // namespace

Action register_campaign(CLI::App& app) {
  auto o = std::make_shared<CampaignCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "campaign", "simulate a whole training run with failures, recovery and checkpoints: ETTR and lost time");
  add_scenario_options(*cmd, o->scenario);
  add_gpus_option(*cmd, o->scenario);
  cmd->add_option("--days", o->campaign.days, "wall-clock days of training simulated")
      ->capture_default_str()
      ->check(number_in(0, 3650));
  cmd->add_option("--seeds", o->campaign.seeds, "independent campaigns (ETTR mean and spread over them)")
      ->capture_default_str()
      ->check(integer_in(INT64_MIN, INT64_MAX));  // the study says which counts are valid
  cmd->add_flag("--sweep-checkpoint-interval", o->campaign.sweep,
                "also run every seed at a grid of checkpoint intervals around Daly's optimum");
  cmd->add_option("--intervals", o->campaign.sweep_intervals_s,
                  "with --sweep-checkpoint-interval: the sweep's intervals in seconds instead of the grid")
      ->delimiter(',')
      ->check(number_in(1e-3, 315'360'000));  // up to ten years, as checkpoint.interval_s
  cmd->add_option("--threads", o->campaign.threads,
                  "iteration simulations run at once (0: one per hardware thread; results do not change)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxThreadsOption));
  cmd->add_flag("--json", o->json, "print one JSON object (with the whole timeline of seed 0)");
  cmd->add_option("--timeline-lines", o->timeline_lines, "timeline entries in the text report (not with --json)")
      ->capture_default_str()
      ->check(integer_in(0, 10'000'000));
  return [cmd, o] {
    if (!cmd->parsed()) return;
    refuse_inert(*cmd, "--timeline-lines", !o->json, "with --json (the JSON holds the whole timeline of seed 0)");
    run_campaign(*o);
  };
}

}  // namespace megasim::cli
