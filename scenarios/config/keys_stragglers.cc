#include "scenarios/config/keys_stragglers.h"

#include "models/stragglers.h"
#include "scenarios/config/key_binding.h"
#include "scenarios/config/key_ranges.h"

namespace megasim::scenarios {

void add_straggler_keys(std::vector<KeySpec>& t) {
  using binding::field;
  using namespace ranges;  // the bounds (key_ranges.h) read as data in the table
  using models::StragglerParams;
  constexpr auto s = &Scenario::stragglers;
  t.push_back(field("stragglers", "enabled", "",
                    "false: no straggler source applies (the ideal cluster), whatever the keys below say", s,
                    &StragglerParams::enabled));
  t.push_back(field("stragglers", "slow_host_fraction", "",
                    "fraction of servers that are slow (MegaScale: about 0.005)", s,
                    &StragglerParams::slow_host_fraction, between(0, 1)));
  t.push_back(field("stragglers", "slow_host_factor", "", "mean compute multiplier of a slow server (1.1: 10% slower)",
                    s, &StragglerParams::slow_host_factor, between(1, kMaxSlowdown)));
  t.push_back(field("stragglers", "slow_host_factor_stddev", "", "standard deviation of a slow server's multiplier", s,
                    &StragglerParams::slow_host_factor_stddev, between(0, kMaxSlowdown)));
  t.push_back(field("stragglers", "slow_hosts", "", "explicit slow servers: \"id:factor,...\"", s,
                    &StragglerParams::slow_hosts));
  t.push_back(
      field("stragglers", "slow_gpus", "", "explicit slow GPUs: \"id:factor,...\"", s, &StragglerParams::slow_gpus));
  t.push_back(field("stragglers", "slow_nics", "", "slow NICs: \"gpu:factor,...\" divides that GPU's NIC bandwidth", s,
                    &StragglerParams::slow_nics));
  t.push_back(field("stragglers", "slow_links", "",
                    "degraded links: \"link:factor,...\" divides that directed link's bandwidth", s,
                    &StragglerParams::slow_links));
  t.push_back(field("stragglers", "jitter_cv", "",
                    "per compute task and rank: log-normal time multiple of mean 1 with this coefficient of variation",
                    s, &StragglerParams::jitter_cv, between(0, 10)));
  t.push_back(field("stragglers", "gc_period_s", "s", "every rank pauses (garbage collection) this often; 0: never", s,
                    &StragglerParams::gc_period_s, between(0, kDayS)));
  t.push_back(field("stragglers", "gc_pause_s", "s", "length of one pause", s, &StragglerParams::gc_pause_s,
                    between(0, kHourS)));
  t.push_back(field("stragglers", "gc_synchronized", "",
                    "pauses planned at the same instants on every rank (else each rank at a random phase)", s,
                    &StragglerParams::gc_synchronized));
  t.push_back(
      field("stragglers", "seq_length_cv", "",
            "per micro-batch and replica: log-normal sequence-length multiple (attention grows with its square)", s,
            &StragglerParams::seq_length_cv, between(0, 10)));
  t.push_back(field("stragglers", "drift_per_hour", "",
                    "mean growth per hour of uptime of a drifting server's compute multiplier (0: no drift)", s,
                    &StragglerParams::drift_per_hour, between(0, 1)));
  t.push_back(field("stragglers", "drift_host_fraction", "", "fraction of servers that drift (a restart resets them)",
                    s, &StragglerParams::drift_host_fraction, between(0, 1)));
  t.push_back(field("stragglers", "drift_cv", "", "server-to-server coefficient of variation of the drift rate", s,
                    &StragglerParams::drift_cv, between(0, 10)));
  t.push_back(field("stragglers", "uptime_h", "h",
                    "hours since the job (re)started at which the iteration is simulated (campaigns track it)", s,
                    &StragglerParams::uptime_h, between(0, kTenYearsH)));
  t.push_back(field("stragglers", "whatif_replaced_hosts", "", "how many of the slowest hosts the what-if replaces", s,
                    &StragglerParams::whatif_replaced_hosts, between(0, kMaxGpus)));
}

}  // namespace megasim::scenarios
