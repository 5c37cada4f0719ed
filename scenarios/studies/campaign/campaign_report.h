// The campaign report as text and as JSON.
//
// JSON keys (stable): name, days, seeds, gpus, iteration_time_s (healthy), ettr, ettr_p5, ettr_p95,
// ettr_per_seed, lost_time_s {lost_work, detection, diagnosis, waiting_for_spares, restart,
// checkpoint_load, checkpoint_save, stall, degraded} (mean seconds per seed; with the productive time
// they sum to the wall time), failures {gpu, hbm, host, nic, link, switch, software} (mean per seed,
// flaps apart), flaps, job_failures, job_mtbf_s, young_interval_s, daly_interval_s (null when no
// failure ends the job), checkpoint {interval_s, iterations_per_checkpoint, save_blocking_s,
// upload_s, load_s}, inventory {gpus, hosts, nics, cables {nic, tor_agg, agg_core}, switches {tor,
// agg, core}}, damaged_iterations [{tor_agg_cables, agg_core_cables, agg_switches, core_switches,
// iteration_time_s}], sweep [{interval_s, ettr, ettr_p5, ettr_p95, marks}] and best_interval_s (with
// --sweep-checkpoint-interval; marks name the rows nearest Young's and Daly's intervals and the
// best), timeline [{time_s, event, what, value}] (seed 0).
#pragma once

#include <string>

#include "scenarios/studies/campaign/campaign_study.h"

namespace megasim::scenarios {

std::string to_text(const CampaignReport& report, std::size_t timeline_lines = 20);
std::string to_json(const CampaignReport& report);

// Index of the sweep row with the best mean ETTR (the first on a tie); precondition: a sweep.
std::size_t best_sweep_row(const CampaignReport& report);
// Index of the sweep row nearest `interval_s` in ratio; precondition: a sweep.
std::size_t nearest_sweep_row(const CampaignReport& report, double interval_s);

}  // namespace megasim::scenarios
