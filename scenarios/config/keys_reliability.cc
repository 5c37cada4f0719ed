#include "scenarios/config/keys_reliability.h"

#include "models/reliability.h"
#include "scenarios/config/key_binding.h"
#include "scenarios/config/key_ranges.h"

namespace megasim::scenarios {
namespace {

using binding::enum_field;
using binding::field;
using namespace ranges;  // the bounds (key_ranges.h) read as data in the table

void add_failure_keys(std::vector<KeySpec>& t) {
  using models::FailureParams;
  constexpr auto f = &Scenario::failures;
  t.push_back(field("failures", "gpu_mtbf_h", "h", "mean time between failures of one GPU (0: never)", f,
                    &FailureParams::gpu_mtbf_h, zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "hbm_mtbf_h", "h", "the same for the HBM of one GPU", f, &FailureParams::hbm_mtbf_h,
                    zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "host_mtbf_h", "h", "the same for one host (CPU, memory, power, chassis, disk)", f,
                    &FailureParams::host_mtbf_h, zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "nic_mtbf_h", "h", "the same for one NIC", f, &FailureParams::nic_mtbf_h,
                    zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "link_mtbf_h", "h", "the same for one network cable", f, &FailureParams::link_mtbf_h,
                    zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "switch_mtbf_h", "h", "the same for one ToR, aggregation or core switch", f,
                    &FailureParams::switch_mtbf_h, zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "software_mtbf_h", "h", "the same for software, per GPU process", f,
                    &FailureParams::software_mtbf_h, zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "link_flap_mtbf_h", "h", "mean time between flaps of one network cable (0: never)", f,
                    &FailureParams::link_flap_mtbf_h, zero_or(kMinMtbfH, kMaxMtbfH)));
  t.push_back(field("failures", "link_flap_duration_s", "s", "how long a flap keeps the cable down (mean or fixed)", f,
                    &FailureParams::link_flap_duration_s, between(1e-6, kDayS)));
  t.push_back(enum_field("failures", "link_flap_durations", "exponential|fixed",
                         "flap durations: exponential with that mean, or all equal to it", f,
                         &FailureParams::link_flap_durations, models::parse_flap_durations));
  t.push_back(field("failures", "link_repair_h", "h", "until a failed cable is back in service", f,
                    &FailureParams::link_repair_h, between(0, kYearH)));
  t.push_back(field("failures", "switch_repair_h", "h", "until a failed switch is back in service", f,
                    &FailureParams::switch_repair_h, between(0, kYearH)));
  t.push_back(field("failures", "host_repair_h", "h", "until an evicted host rejoins the spare pool", f,
                    &FailureParams::host_repair_h, between(0, kYearH)));
  t.push_back(field("failures", "rate_scale", "", "multiplies every failure and flap rate", f,
                    &FailureParams::rate_scale, between(0, kMaxRateScale)));
}

void add_recovery_keys(std::vector<KeySpec>& t) {
  using models::RecoveryParams;
  constexpr auto r = &Scenario::recovery;
  t.push_back(enum_field("recovery", "detection", "heartbeat|nccl_watchdog",
                         "what notices a failure: missed heartbeats, or only the collective timeout", r,
                         &RecoveryParams::detection, models::parse_detection));
  t.push_back(field("recovery", "heartbeat_interval_s", "s", "heartbeat period of the per-node daemon (0: instant)", r,
                    &RecoveryParams::heartbeat_interval_s, between(0, kHourS)));
  t.push_back(field("recovery", "heartbeat_misses", "", "missed heartbeats that declare a failure", r,
                    &RecoveryParams::heartbeat_misses, between(1, 1000)));
  t.push_back(field("recovery", "nccl_watchdog_s", "s", "collective timeout that ends a hung job", r,
                    &RecoveryParams::nccl_watchdog_s, between(0, kWeekS)));
  t.push_back(field("recovery", "switch_notification", "", "switches report network failures to the job", r,
                    &RecoveryParams::switch_notification));
  t.push_back(field("recovery", "switch_notification_s", "s", "delay of a switch's failure notification", r,
                    &RecoveryParams::switch_notification_s, between(0, kHourS)));
  t.push_back(field("recovery", "diagnosis_s", "s", "stop-time diagnosis tests that find the bad hosts", r,
                    &RecoveryParams::diagnosis_s, between(0, kWeekS)));
  t.push_back(field("recovery", "spare_hosts", "hosts", "spare pool that replaces evicted hosts", r,
                    &RecoveryParams::spare_hosts, between(0, kMaxGpus)));
  t.push_back(field("recovery", "replace_s", "s", "bringing spares into the job", r, &RecoveryParams::replace_s,
                    between(0, kWeekS)));
  t.push_back(field("recovery", "restart_s", "s", "launching the processes again", r, &RecoveryParams::restart_s,
                    between(0, kWeekS)));
  t.push_back(field("recovery", "comm_init_s_per_gpu", "s", "communicator initialisation per GPU of the job", r,
                    &RecoveryParams::comm_init_s_per_gpu, between(0, 10)));
}

void add_checkpoint_keys(std::vector<KeySpec>& t) {
  using models::CheckpointParams;
  constexpr auto c = &Scenario::checkpoint;
  t.push_back(field("checkpoint", "interval_s", "s", "training time between saves (whole iterations)", c,
                    &CheckpointParams::interval_s, between(1e-3, kTenYearsS)));
  t.push_back(field("checkpoint", "save_blocking_s", "s", "blocking save, GPU to host memory", c,
                    &CheckpointParams::save_blocking_s, between(0, kWeekS)));
  t.push_back(field("checkpoint", "upload_s", "s", "background upload to storage; a checkpoint counts after it", c,
                    &CheckpointParams::upload_s, between(0, kWeekS)));
  t.push_back(field("checkpoint", "load_s", "s", "loading the checkpoint on restart", c, &CheckpointParams::load_s,
                    between(0, kWeekS)));
}

}  // namespace

void add_reliability_keys(std::vector<KeySpec>& table) {
  add_failure_keys(table);
  add_recovery_keys(table);
  add_checkpoint_keys(table);
}

}  // namespace megasim::scenarios
