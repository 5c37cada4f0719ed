// How much work a campaign asks for, checked before it runs (campaign_study.h: check_campaign_events).
#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "scenarios/studies/campaign/campaign_study.h"
#include "sim/error.h"

namespace megasim::scenarios {

void check_campaign_events(const CampaignConfig& config, std::int64_t seeds, double iteration_s) {
  double failures = 0;
  const models::FailureProcess* largest = nullptr;
  for (const models::FailureProcess& p : config.processes) {
    failures += p.rate_per_s * config.horizon_s;
    if (largest == nullptr || p.rate_per_s > largest->rate_per_s) largest = &p;
  }
  // A save every interval of training, and at least one iteration apart.
  const double saves = config.horizon_s / std::max(config.checkpoint.interval_s, iteration_s);
  const double per_seed = failures + saves;
  const double total = per_seed * static_cast<double>(seeds);
  if (per_seed <= kMaxCampaignEventsPerSeed && total <= kMaxCampaignEvents) return;
  const std::string amount = fmt::format(
      "{:.3g} expected failures and flaps and {:.3g} checkpoints per seed over {:g} days, {:.3g} over "
      "{} seed{}",
      failures, saves, config.horizon_s / 86400, total, seeds, seeds == 1 ? "" : "s");
  const std::string bound =
      fmt::format("at most {:.0e} events per seed and {:.0e} in all", kMaxCampaignEventsPerSeed, kMaxCampaignEvents);
  if (failures >= saves) {
    throw sim::ConfigError("failures.rate_scale", fmt::format("{}", config.failures.rate_scale),
                           fmt::format("rates a campaign can simulate, {}: these give {} (the most frequent: {}, "
                                       "every {:.3g} s; fewer --days or --seeds also fit)",
                                       bound, amount, largest != nullptr ? largest->name : "none",
                                       largest != nullptr ? 1 / largest->rate_per_s : 0.0));
  }
  throw sim::ConfigError("checkpoint.interval_s", fmt::format("{}", config.checkpoint.interval_s),
                         fmt::format("an interval a campaign can simulate, {}: this one gives {} (fewer --days or "
                                     "--seeds also fit)",
                                     bound, amount));
}

}  // namespace megasim::scenarios
