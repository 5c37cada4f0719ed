// The campaign's failures and the recovery that follows a job failure (campaign_engine.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "scenarios/studies/campaign/campaign_run.h"
#include "sim/error.h"

namespace megasim::scenarios::detail {

// Poisson processes: the next failure of a kind comes after an exponential time of mean 1/rate.
// Failures past the horizon are never scheduled (their time would not fit in SimTime either).
void CampaignRun::schedule_next_failure(std::size_t process) {
  const double rate = config_.processes[process].rate_per_s;
  const double at = sim::to_seconds(sim_.now()) + process_rngs_[process].exponential(1.0 / rate);
  if (at > config_.horizon_s) return;
  sim_.schedule_at(std::max(sim_.now(), sim::from_seconds(at)), [this, process] { on_failure(process); });
}

void CampaignRun::on_failure(std::size_t index) {
  schedule_next_failure(index);
  const models::FailureProcess& p = config_.processes[index];
  switch (p.effect) {
    case models::FailureEffect::kFlap: {
      ++out_.flaps;
      const double mean = config_.failures.link_flap_duration_s;
      const double down_s =
          config_.failures.link_flap_durations == models::FlapDurations::kFixed ? mean : flap_rng_.exponential(mean);
      log("flap", p.name, down_s);
      on_network_outage(p, down_s);
      return;
    }
    case models::FailureEffect::kDamage: {
      ++out_.failures[static_cast<std::size_t>(p.component)];
      log("failure", p.name);
      const std::size_t slot = damage_slot(p);
      FabricDamage next = damage_;
      ++next.failed[slot];
      if (std::isinf(oracle_.iteration_time_s(next))) {
        on_partition(p, next);
        return;
      }
      set_damage(slot, 1);
      sim_.schedule_after(delay(p.repair_s), [this, slot, name = p.name] {
        log("repaired", name);
        set_damage(slot, -1);
      });
      // Its links are down for good: the flows on them stall until the fabric routes around them.
      on_network_outage(p, std::numeric_limits<double>::infinity());
      return;
    }
    case models::FailureEffect::kFailJob:
      ++out_.failures[static_cast<std::size_t>(p.component)];
      log("failure", p.name);
      if (p.evicted_hosts > 0) {
        hosts_to_replace_ += p.evicted_hosts;
        const std::int64_t hosts = p.evicted_hosts;
        sim_.schedule_after(delay(p.repair_s), [this, hosts] { on_hosts_back(hosts); });
      }
      fail_job(p);
      return;
  }
}

// The part p just lost would partition the fabric (campaign_engine.h): its hosts cut off are evicted
// and come back with its repair, and the job fails, after the NCCL timeout when it was training.
void CampaignRun::on_partition(const models::FailureProcess& p, const FabricDamage& partitioned) {
  MEGASIM_ASSERT(oracle_.disconnected_hosts, "an oracle with partitioned states says which hosts they cut off");
  const std::int64_t hosts = oracle_.disconnected_hosts(partitioned);
  MEGASIM_ASSERT(hosts > 0, "a partitioned fabric cuts some hosts off");
  log("partitioned", p.name, static_cast<double>(hosts));
  hosts_to_replace_ += hosts;
  sim_.schedule_after(delay(p.repair_s), [this, hosts, name = p.name] {
    log("repaired", name);
    on_hosts_back(hosts);
  });
  if (!running()) {
    fail_job(p);
    return;
  }
  const double timeout = config_.stall_timeout_s > 0 ? config_.stall_timeout_s : config_.recovery.nccl_watchdog_s;
  stall(timeout);
  if (!sim_.is_pending(fatal_event_)) {
    fatal_process_ = &p;
    fatal_event_ = sim_.schedule_after(delay(timeout), [this] { fail_job(*fatal_process_); });
  }
}

// A cable of p's tier is down for down_s: the training job's flows on it stall for what the fabric
// says; past the NCCL timeout the job fails when the timeout fires.
void CampaignRun::on_network_outage(const models::FailureProcess& p, double down_s) {
  if (phase_ != Phase::kTraining && phase_ != Phase::kStalled) return;
  const double stall_s = oracle_.stall_s(p.tier, down_s);
  const double timeout = config_.stall_timeout_s;
  if (timeout > 0 && stall_s > timeout) {
    stall(timeout);
    if (!sim_.is_pending(fatal_event_)) {
      fatal_process_ = &p;
      fatal_event_ = sim_.schedule_after(delay(timeout), [this] { fail_job(*fatal_process_); });
    }
    return;
  }
  stall(stall_s);
}

// The job stops: work since the last valid checkpoint is lost, an upload under way is discarded, and
// recovery starts (again, when it was already under way).
void CampaignRun::fail_job(const models::FailureProcess& p) {
  ++out_.job_failures;
  log("job_failed", p.name);
  sim_.cancel(fatal_event_);
  const bool was_running = running();
  enter(Phase::kDetecting);
  if (was_running) {
    lost(LostCause::kLostWork) += (progress_ - valid_progress_) * healthy_s_;
    progress_ = valid_progress_;
    next_save_progress_ = valid_progress_ + iterations_per_save_;
  }
  if (upload_pending_) {
    sim_.cancel(upload_event_);
    upload_pending_ = false;
    log("checkpoint_discarded", {}, upload_progress_);
  }
  schedule_phase_end(detection_delay_s(p.network), &CampaignRun::on_detected);
}

double CampaignRun::detection_delay_s(bool network) {
  const models::RecoveryParams& r = config_.recovery;
  double delay = r.nccl_watchdog_s;
  if (r.detection == models::Detection::kHeartbeat) {
    delay = (static_cast<double>(r.heartbeat_misses - 1) + detection_rng_.uniform01()) * r.heartbeat_interval_s;
  }
  if (network && r.switch_notification) delay = std::min(delay, r.switch_notification_s);
  return delay;
}

void CampaignRun::on_detected() {
  log("detected");
  enter(Phase::kDiagnosing);
  schedule_phase_end(config_.recovery.diagnosis_s, &CampaignRun::on_diagnosed);
}

void CampaignRun::on_diagnosed() {
  log("diagnosed");
  take_spares();
}

// Evicted hosts are replaced all at once from the pool; with too few spares the job waits for
// repaired hosts (on_hosts_back). A failure that evicted nobody restarts on the same hosts.
void CampaignRun::take_spares() {
  if (hosts_to_replace_ == 0) {
    on_replaced();
    return;
  }
  if (spare_pool_ < hosts_to_replace_) {
    if (phase_ != Phase::kWaitingForSpares) {
      log("waiting_for_spares", {}, static_cast<double>(hosts_to_replace_));
      enter(Phase::kWaitingForSpares);
    }
    return;
  }
  spare_pool_ -= hosts_to_replace_;
  log("replaced", {}, static_cast<double>(hosts_to_replace_));
  hosts_to_replace_ = 0;
  enter(Phase::kReplacing);
  schedule_phase_end(config_.recovery.replace_s, &CampaignRun::on_replaced);
}

void CampaignRun::on_replaced() {
  enter(Phase::kRestarting);
  schedule_phase_end(config_.recovery.restart_s + models::comm_init_s(config_.recovery, config_.job_gpus),
                     &CampaignRun::on_restarted);
}

void CampaignRun::on_restarted() {
  log("restarted");
  restart_drift();
  enter(Phase::kLoading);
  schedule_phase_end(config_.checkpoint.load_s, &CampaignRun::on_loaded);
}

void CampaignRun::on_loaded() {
  log("resumed", {}, progress_);
  resume_training();
}

void CampaignRun::on_hosts_back(std::int64_t hosts) {
  spare_pool_ += hosts;
  if (phase_ == Phase::kWaitingForSpares) take_spares();
}

}  // namespace megasim::scenarios::detail
