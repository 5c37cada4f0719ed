// Stragglers (DESIGN.md "Stragglers"): what makes some ranks slower than others in a synchronous
// job, as parameters of the `[stragglers]` scenario section. The draws (which hosts are slow, each
// task's jitter, each micro-batch's length, each rank's pause phase) come from named random streams
// of the scenario's seed (backend/sim/straggler_draw.h), so the same seed gives the same stragglers.
//
//  - Slow hosts: each server is slow with probability slow_host_fraction, its GPUs' compute then
//    multiplied by a factor drawn from a normal of mean slow_host_factor and deviation
//    slow_host_factor_stddev (at least 1). MegaScale (NSDI'24 §5) found about 0.5% of machines
//    about 10% slower in forward compute: fraction 0.005, factor 1.1. Explicit lists add named
//    servers and GPUs: "3:1.2,17:1.1" (id:factor pairs).
//  - Slow NICs and links: "gpu:factor" degrades both directions of that GPU's NIC link to its ToR,
//    "link:factor" one directed link of the topology (ids as `megasim topo --write-json` lists
//    them); the factor >= 1 divides the link's bandwidth (2: half speed).
//  - Jitter: every compute task of every rank takes a log-normal multiple of its time with mean 1
//    and coefficient of variation jitter_cv (kernel-level noise, clock and power throttling).
//  - Pauses: every gc_period_s each rank stops for gc_pause_s (Python garbage collection, as
//    MegaScale saw): a compute task running over a pause instant takes that much longer. Unplanned
//    (gc_synchronized = false), each rank's first pause is at a uniformly random phase of the
//    period, so pauses hit different ranks at different moments; planned (true), all ranks pause
//    at the same instants, as a training loop that calls gc.collect() every N steps does.
//  - Sequence-length imbalance: each micro-batch of each data-parallel replica holds sequences of
//    a log-normal multiple r of the mean length (mean 1, coefficient of variation seq_length_cv).
//    Its compute scales with r, except the attention core's share a, which grows with r²:
//    factor (1 - a)·r + a·r². Transfers keep their sizes.
//  - Drift: a server's compute slows down steadily while the job's processes live (fragmented
//    allocators, leaking caches and growing Python heaps; MegaScale §6.3 saw MFU fall over a run
//    until a restart, and heat and ageing do the same in hardware), and a restart resets it. Each
//    server drifts with probability drift_host_fraction, at a rate drawn from a log-normal of mean
//    drift_per_hour and coefficient of variation drift_cv; at uptime u hours its multiplier is
//    (1 + rate·u) times its other slowdowns. An iteration is simulated at uptime_h; campaigns
//    (scenarios/studies/campaign/campaign_study.h) follow the uptime since each restart themselves.
//  - enabled = false switches every source above off at once, keeping their values: the shipped
//    MegaScale scenarios describe a production cluster (its slow hosts), and
//    `--set stragglers.enabled=false` is the same run on an ideal one.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace megasim::models {

struct StragglerParams {
  bool enabled = true;  // false: none of the sources below applies
  double slow_host_fraction = 0;
  double slow_host_factor = 1.1;
  double slow_host_factor_stddev = 0;
  std::string slow_hosts;  // "server:factor,..."
  std::string slow_gpus;   // "gpu:factor,..."
  std::string slow_nics;   // "gpu:factor,...": that GPU's NIC link, both directions
  std::string slow_links;  // "link:factor,...": one directed link
  double jitter_cv = 0;
  double gc_period_s = 0;  // 0: no pauses
  double gc_pause_s = 0;
  bool gc_synchronized = false;
  double seq_length_cv = 0;
  double drift_per_hour = 0;  // 0: no drift
  double drift_host_fraction = 1;
  double drift_cv = 0;
  double uptime_h = 0;  // hours since the job (re)started, for one iteration
  // What-if: how many of the slowest hosts the report replaces.
  std::int64_t whatif_replaced_hosts = 1;

  // Whether any straggler source is on (the report then adds its straggler section).
  [[nodiscard]] bool active() const;
  // Whether servers drift (at some uptime; active() says whether they have at uptime_h).
  [[nodiscard]] bool drifts() const { return enabled && drift_per_hour > 0 && drift_host_fraction > 0; }
};

// Throws sim::ConfigError naming the key ("stragglers.jitter_cv") and what is valid for a
// negative or non-finite number, a fraction above 1, a factor below 1, a pause without a period,
// a malformed list, or drift keys out of range.
void validate(const StragglerParams& params);

// "3:1.2,17:1.1" as (id, factor) pairs; `key` names the list in errors. Ids >= 0, each at most once
// (sim/repeats.h), factors >= 1.
std::vector<std::pair<std::int64_t, double>> parse_factor_list(const std::string& text, const std::string& key);

// A log-normal draw's (mu, sigma) for a given mean and coefficient of variation.
std::pair<double, double> lognormal_parameters(double mean, double cv);

// The compute multiple of a task whose attention-core share of time is `attention_share` when its
// sequences are `r` times the mean length: (1 - a)·r + a·r².
double sequence_length_factor(double r, double attention_share);

}  // namespace megasim::models
