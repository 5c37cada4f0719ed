#include "scenarios/studies/campaign/campaign_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <vector>

#include "scenarios/config/json_writer.h"
#include "scenarios/config/plural.h"
#include "sim/error.h"

namespace megasim::scenarios {
namespace {

constexpr std::array<std::string_view, 4> kDamageNames{"tor_agg_cables", "agg_core_cables", "agg_switches",
                                                       "core_switches"};

std::vector<std::string_view> marks_of(const CampaignReport& r, std::size_t row) {
  std::vector<std::string_view> marks;
  if (std::isfinite(r.young_interval_s) && nearest_sweep_row(r, r.young_interval_s) == row) marks.emplace_back("young");
  if (std::isfinite(r.daly_interval_s) && nearest_sweep_row(r, r.daly_interval_s) == row) marks.emplace_back("daly");
  if (best_sweep_row(r) == row) marks.emplace_back("best");
  return marks;
}

void write_ettr(JsonWriter& w, const EttrStats& e) {
  w.field("ettr", e.mean).field("ettr_p5", e.p5).field("ettr_p95", e.p95);
}

void write_inventory(JsonWriter& w, const models::ClusterInventory& inv) {
  w.key("inventory").begin_object();
  w.field("gpus", inv.gpus).field("hosts", inv.hosts).field("nics", inv.nics);
  w.key("cables").begin_object();
  w.field("nic", inv.cables[0]).field("tor_agg", inv.cables[1]).field("agg_core", inv.cables[2]).end_object();
  w.key("switches").begin_object();
  w.field("tor", inv.switches[0]).field("agg", inv.switches[1]).field("core", inv.switches[2]).end_object();
  w.end_object();
}

void write_sweep(JsonWriter& w, const CampaignReport& r) {
  w.key("sweep").begin_array();
  for (std::size_t i = 0; i < r.sweep.size(); ++i) {
    w.begin_object().field("interval_s", r.sweep[i].interval_s);
    write_ettr(w, r.sweep[i].ettr);
    w.key("marks").begin_array();
    for (const std::string_view m : marks_of(r, i)) w.value(m);
    w.end_array().end_object();
  }
  w.end_array();
  w.field("best_interval_s", r.sweep[best_sweep_row(r)].interval_s);
}

void write_timeline(JsonWriter& w, const CampaignReport& r) {
  w.key("timeline").begin_array();
  for (const TimelineEvent& e : r.timeline) {
    w.begin_object().field("time_s", e.time_s).field("event", e.kind).field("what", e.what);
    w.field("value", e.value).end_object();
  }
  w.end_array();
}

std::string hours(double seconds) {
  return fmt::format("{:.2f} h", seconds / 3600);
}

}  // namespace

std::size_t best_sweep_row(const CampaignReport& r) {
  MEGASIM_ASSERT(!r.sweep.empty(), "no sweep");
  std::size_t best = 0;
  for (std::size_t i = 1; i < r.sweep.size(); ++i) {
    if (r.sweep[i].ettr.mean > r.sweep[best].ettr.mean) best = i;
  }
  return best;
}

std::size_t nearest_sweep_row(const CampaignReport& r, double interval_s) {
  MEGASIM_ASSERT(!r.sweep.empty(), "no sweep");
  std::size_t best = 0;
  const auto distance = [&](std::size_t i) { return std::abs(std::log(r.sweep[i].interval_s / interval_s)); };
  for (std::size_t i = 1; i < r.sweep.size(); ++i) {
    if (distance(i) < distance(best)) best = i;
  }
  return best;
}

std::string to_json(const CampaignReport& r) {
  JsonWriter w;
  w.begin_object();
  w.field("name", r.name).field("days", r.days).field("seeds", r.seeds).field("gpus", r.gpus);
  w.field("iteration_time_s", r.iteration_time_s);
  write_ettr(w, r.ettr);
  w.key("ettr_per_seed").begin_array();
  for (const double e : r.ettr.per_seed) w.value(e);
  w.end_array();
  w.key("lost_time_s").begin_object();
  for (std::size_t c = 0; c < kLostCauseCount; ++c) w.field(to_string(static_cast<LostCause>(c)), r.lost_s[c]);
  w.end_object();
  w.key("failures").begin_object();
  for (const models::Component c : models::kComponents) w.field(to_string(c), r.failures[static_cast<std::size_t>(c)]);
  w.end_object();
  w.field("flaps", r.flaps).field("job_failures", r.job_failures);
  w.field("job_mtbf_s", r.job_mtbf_s).field("young_interval_s", r.young_interval_s);
  w.field("daly_interval_s", r.daly_interval_s);
  w.key("checkpoint").begin_object();
  w.field("interval_s", r.checkpoint.interval_s).field("iterations_per_checkpoint", r.iterations_per_checkpoint);
  w.field("save_blocking_s", r.checkpoint.save_blocking_s).field("upload_s", r.checkpoint.upload_s);
  w.field("load_s", r.checkpoint.load_s).end_object();
  write_inventory(w, r.inventory);
  w.key("damaged_iterations").begin_array();
  for (const DamagedIteration& d : r.damaged_iterations) {
    w.begin_object();
    for (std::size_t k = 0; k < kDamageNames.size(); ++k) w.field(kDamageNames[k], d.damage.failed[k]);
    w.field("iteration_time_s", d.iteration_time_s);  // null when partitioned
    if (d.disconnected_hosts > 0) w.field("disconnected_hosts", d.disconnected_hosts);
    w.end_object();
  }
  w.end_array();
  w.key("drift_iterations").begin_array();
  for (const DriftIteration& d : r.drift_iterations) {
    w.begin_object().field("uptime_s", d.uptime_s).field("iteration_time_s", d.iteration_time_s).end_object();
  }
  w.end_array();
  if (!r.sweep.empty()) write_sweep(w, r);
  write_timeline(w, r);
  w.end_object();
  return w.str() + "\n";
}

std::string to_text(const CampaignReport& r, std::size_t timeline_lines) {
  const double wall = r.days * 86400;
  std::string out = fmt::format("campaign: {}, {}, {} x {}\n", r.name, counted(r.gpus, "GPU"), counted(r.days, "day"),
                                counted(r.seeds, "seed"));
  out += fmt::format(
      "iteration: {:.3f} s healthy; checkpoint every {} s ({}), save {} s blocking, "
      "upload {} s, load {} s\n",
      r.iteration_time_s, r.checkpoint.interval_s, counted(r.iterations_per_checkpoint, "iteration"),
      r.checkpoint.save_blocking_s, r.checkpoint.upload_s, r.checkpoint.load_s);
  out += fmt::format("ETTR: {:.4f} mean, {:.4f} p5, {:.4f} p95\n", r.ettr.mean, r.ettr.p5, r.ettr.p95);
  out += "lost time per seed (mean):\n";
  for (std::size_t c = 0; c < kLostCauseCount; ++c) {
    out += fmt::format("  {:<20} {:>10}  {:6.2f}%\n", to_string(static_cast<LostCause>(c)), hours(r.lost_s[c]),
                       100 * r.lost_s[c] / wall);
  }
  out += "failures per seed (mean):";
  for (const models::Component c : models::kComponents) {
    out += fmt::format(" {} {:.2f}", to_string(c), r.failures[static_cast<std::size_t>(c)]);
  }
  out += fmt::format("; link flaps {:.2f}\n", r.flaps);
  out += fmt::format("job failures per seed: {:.2f}; from the rates: MTBF {}, Young {:.0f} s, Daly {:.0f} s\n",
                     r.job_failures, hours(r.job_mtbf_s), r.young_interval_s, r.daly_interval_s);
  for (const DamagedIteration& d : r.damaged_iterations) {
    out += fmt::format("damaged fabric");
    for (std::size_t k = 0; k < kDamageNames.size(); ++k) {
      if (d.damage.failed[k] > 0) out += fmt::format(" {} {}", kDamageNames[k], d.damage.failed[k]);
    }
    if (d.disconnected_hosts > 0) {
      out += fmt::format(": partitioned, {} hosts cut off (evicted when it happens)\n", d.disconnected_hosts);
      continue;
    }
    out += fmt::format(": iteration {:.4f} s ({:+.2f}%)\n", d.iteration_time_s,
                       100 * (d.iteration_time_s / r.iteration_time_s - 1));
  }
  if (!r.drift_iterations.empty()) {
    out += "drift: iteration after";
    for (const DriftIteration& d : r.drift_iterations) {
      out += fmt::format(" {} {:.4f} s;", hours(d.uptime_s), d.iteration_time_s);
    }
    out.back() = '\n';
  }
  if (!r.sweep.empty()) {
    out += "checkpoint interval sweep:\n  interval_s      ETTR       p5      p95\n";
    for (std::size_t i = 0; i < r.sweep.size(); ++i) {
      const SweepPoint& p = r.sweep[i];
      out += fmt::format("  {:>10.1f}  {:.4f}  {:.4f}  {:.4f}  {}\n", p.interval_s, p.ettr.mean, p.ettr.p5, p.ettr.p95,
                         fmt::join(marks_of(r, i), ", "));
    }
  }
  // Checkpoints are most of the timeline; the text shows the rest (the JSON has every event).
  std::vector<const TimelineEvent*> events;
  for (const TimelineEvent& e : r.timeline) {
    if (e.kind != "checkpoint_saved" && e.kind != "checkpoint_valid") events.push_back(&e);
  }
  const std::size_t shown = std::min(timeline_lines, events.size());
  out += fmt::format("timeline of seed 0 (first {} of {} besides checkpoints; all with --json):\n", shown,
                     counted(events.size(), "event"));
  for (std::size_t i = 0; i < shown; ++i) {
    const TimelineEvent& e = *events[i];
    out += fmt::format("  {:>12.1f} s  {:<20} {:<14} {:.6g}\n", e.time_s, e.kind, e.what, e.value);
  }
  return out;
}

}  // namespace megasim::scenarios
