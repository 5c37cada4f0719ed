// The campaign's phases, training progress and checkpoints (campaign_engine.h).
#include "scenarios/studies/campaign/campaign_engine.h"

#include <algorithm>
#include <cmath>

#include "scenarios/studies/campaign/campaign_run.h"
#include "sim/error.h"

namespace megasim::scenarios {

std::string_view to_string(LostCause c) {
  switch (c) {
    case LostCause::kLostWork:
      return "lost_work";
    case LostCause::kDetection:
      return "detection";
    case LostCause::kDiagnosis:
      return "diagnosis";
    case LostCause::kWaitingForSpares:
      return "waiting_for_spares";
    case LostCause::kRestart:
      return "restart";
    case LostCause::kCheckpointLoad:
      return "checkpoint_load";
    case LostCause::kCheckpointSave:
      return "checkpoint_save";
    case LostCause::kStall:
      return "stall";
    case LostCause::kDegraded:
      return "degraded";
    case LostCause::kDrift:
      return "drift";
  }
  return "?";
}

std::size_t damage_slot(const models::FailureProcess& process) {
  MEGASIM_ASSERT(process.effect == models::FailureEffect::kDamage && process.tier != models::FabricTier::kNic,
                 "only switch-to-switch cables and aggregation or core switches are routed around");
  const std::size_t tier = process.tier == models::FabricTier::kTorAgg ? 0 : 1;
  return process.component == models::Component::kLink ? tier : 2 + tier;
}

namespace detail {
namespace {

LostCause cause_of(Phase phase) {
  switch (phase) {
    case Phase::kStalled:
      return LostCause::kStall;
    case Phase::kSaving:
    case Phase::kWaitingForUpload:
      return LostCause::kCheckpointSave;
    case Phase::kDetecting:
      return LostCause::kDetection;
    case Phase::kDiagnosing:
      return LostCause::kDiagnosis;
    case Phase::kWaitingForSpares:
      return LostCause::kWaitingForSpares;
    case Phase::kReplacing:
    case Phase::kRestarting:
      return LostCause::kRestart;
    case Phase::kLoading:
      return LostCause::kCheckpointLoad;
    case Phase::kTraining:
      break;
  }
  MEGASIM_ASSERT(false, "training time is split by settle()");
  return LostCause::kLostWork;
}

}  // namespace

CampaignRun::CampaignRun(const CampaignConfig& config, const CampaignOracle& oracle, std::uint64_t seed, bool record)
    : config_(config),
      oracle_(oracle),
      streams_(seed),
      detection_rng_(streams_.stream("campaign.detection")),
      flap_rng_(streams_.stream("campaign.flap_duration")),
      record_(record) {
  MEGASIM_ASSERT(config.horizon_s > 0, "a campaign needs a positive horizon");
  healthy_s_ = oracle_.iteration_time_s(FabricDamage{});
  MEGASIM_ASSERT(healthy_s_ > 0, "the healthy iteration time must be positive");
  damaged_s_ = healthy_s_;
  current_s_ = healthy_s_;
  iterations_per_save_ = std::max(1.0, std::round(config.checkpoint.interval_s / healthy_s_));
  next_save_progress_ = iterations_per_save_;
  spare_pool_ = config.recovery.spare_hosts;
  for (const models::FailureProcess& p : config.processes) {
    process_rngs_.push_back(streams_.stream("campaign." + std::string(p.name)));
  }
}

SeedOutcome CampaignRun::run() {
  for (std::size_t i = 0; i < config_.processes.size(); ++i) schedule_next_failure(i);
  restart_drift();
  schedule_save();
  const sim::SimTime horizon = sim::from_seconds(config_.horizon_s, "the campaign's horizon (--days)");
  sim_.run_until(horizon);
  if (phase_ == Phase::kTraining) {
    settle();
  } else {
    lost(cause_of(phase_)) += sim::to_seconds(horizon - phase_start_);
  }
  // Work since the last checkpoint is still the job's at the horizon: it counts as productive.
  out_.iterations = progress_;
  out_.productive_s = progress_ * healthy_s_;
  out_.ettr = out_.productive_s / config_.horizon_s;
  return std::move(out_);
}

bool CampaignRun::running() const {
  return phase_ == Phase::kTraining || phase_ == Phase::kStalled || phase_ == Phase::kSaving ||
         phase_ == Phase::kWaitingForUpload;
}

// Training time since the last settle: the healthy share of each iteration is work, the damage's
// share degraded and the drift's share drift.
void CampaignRun::settle() {
  const double dt = sim::to_seconds(sim_.now() - settled_at_);
  settled_at_ = sim_.now();
  if (phase_ != Phase::kTraining || dt <= 0) return;
  const double iterations = dt / current_s_;
  progress_ += iterations;
  if (current_s_ == healthy_s_) return;
  const double slower = dt - iterations * healthy_s_;
  if (drift_ == 1) {
    lost(LostCause::kDegraded) += slower;
  } else if (damaged_s_ == healthy_s_) {
    lost(LostCause::kDrift) += slower;
  } else {
    const double drift = iterations * (current_s_ - damaged_s_);
    lost(LostCause::kDrift) += drift;
    lost(LostCause::kDegraded) += slower - drift;
  }
}

// Closes the current phase's account and starts the next; cancels the current phase's end.
void CampaignRun::enter(Phase next) {
  if (phase_ == Phase::kTraining) {
    settle();
  } else {
    lost(cause_of(phase_)) += sim::to_seconds(sim_.now() - phase_start_);
  }
  sim_.cancel(phase_event_);
  phase_ = next;
  phase_start_ = sim_.now();
  settled_at_ = sim_.now();
}

void CampaignRun::schedule_phase_end(double seconds, void (CampaignRun::*handler)()) {
  phase_event_ = sim_.schedule_after(delay(seconds), [this, handler] { (this->*handler)(); });
}

void CampaignRun::resume_training() {
  enter(Phase::kTraining);
  schedule_save();
}

// While training: the save falls due when progress reaches the next multiple of the interval.
void CampaignRun::schedule_save() {
  sim_.cancel(phase_event_);
  const double seconds = std::max(0.0, (next_save_progress_ - progress_) * current_s_);
  phase_event_ = sim_.schedule_after(delay(seconds, true), [this] { on_save_due(); });
}

void CampaignRun::on_save_due() {
  if (upload_pending_) {
    enter(Phase::kWaitingForUpload);  // on_upload_done starts the save
    return;
  }
  start_save();
}

void CampaignRun::start_save() {
  enter(Phase::kSaving);
  schedule_phase_end(config_.checkpoint.save_blocking_s, &CampaignRun::on_save_done);
}

void CampaignRun::on_save_done() {
  log("checkpoint_saved", {}, progress_);
  upload_progress_ = progress_;
  next_save_progress_ += iterations_per_save_;
  if (config_.checkpoint.upload_s <= 0) {
    on_upload_done();
  } else {
    upload_pending_ = true;
    upload_event_ = sim_.schedule_after(delay(config_.checkpoint.upload_s), [this] { on_upload_done(); });
  }
  resume_training();
}

void CampaignRun::on_upload_done() {
  upload_pending_ = false;
  valid_progress_ = upload_progress_;
  ++out_.checkpoints;
  log("checkpoint_valid", {}, valid_progress_);
  if (phase_ == Phase::kWaitingForUpload) start_save();
}

// A damaged part goes out of (delta 1) or back into (delta -1) the fabric: a new iteration time.
void CampaignRun::set_damage(std::size_t slot, int delta) {
  if (phase_ == Phase::kTraining) settle();
  damage_.failed[slot] += delta;
  MEGASIM_ASSERT(damage_.failed[slot] >= 0, "more repairs than failures");
  damaged_s_ = oracle_.iteration_time_s(damage_);
  MEGASIM_ASSERT(damaged_s_ > 0, "iteration times must be positive");
  update_iteration_time();
}

// The processes (re)started: uptime 0, the drift of the first step.
void CampaignRun::restart_drift() {
  sim_.cancel(drift_event_);
  processes_started_ = sim_.now();
  drift_step_ = 0;
  if (config_.drift_step_s <= 0 || !oracle_.drift_factor) return;
  on_drift_step();
}

void CampaignRun::on_drift_step() {
  const double step = config_.drift_step_s;
  drift_ = oracle_.drift_factor((static_cast<double>(drift_step_) + 0.5) * step);
  MEGASIM_ASSERT(drift_ > 0, "drift factors must be positive");
  update_iteration_time();
  ++drift_step_;
  // Steps are counted from the processes' start, so rounding does not accumulate.
  const sim::SimTime next = processes_started_ + sim::from_seconds(static_cast<double>(drift_step_) * step);
  if (next <= sim::from_seconds(config_.horizon_s)) drift_event_ = sim_.schedule_at(next, [this] { on_drift_step(); });
}

// damaged_s_ or drift_ changed: training so far at the old time, the next save at the new one.
void CampaignRun::update_iteration_time() {
  if (phase_ == Phase::kTraining) settle();
  current_s_ = damaged_s_ * drift_;
  if (phase_ == Phase::kTraining) schedule_save();
}

// Flows stop for `seconds` (extending a stall already under way).
void CampaignRun::stall(double seconds) {
  if (seconds <= 0 || (phase_ != Phase::kTraining && phase_ != Phase::kStalled)) return;
  const sim::SimTime until = sim_.now() + delay(seconds);
  if (phase_ == Phase::kStalled && until <= stall_until_) return;
  log("stall", {}, seconds);
  if (phase_ == Phase::kTraining) {
    enter(Phase::kStalled);
  } else {
    sim_.cancel(phase_event_);
  }
  stall_until_ = until;
  phase_event_ = sim_.schedule_at(until, [this] { on_stall_end(); });
}

void CampaignRun::on_stall_end() {
  resume_training();
}

// Past the horizon every delay is as good as any other: capped there, durations from any input fit in
// SimTime.
sim::SimTime CampaignRun::delay(double seconds, bool round_up) const {
  const double s = std::clamp(seconds, 0.0, config_.horizon_s + 1);
  return round_up ? sim::ceil_from_seconds(s) : sim::from_seconds(s);
}

void CampaignRun::log(std::string_view kind, std::string_view what, double value) {
  if (record_) out_.timeline.push_back({sim::to_seconds(sim_.now()), kind, what, value});
}

}  // namespace detail

SeedOutcome run_campaign_seed(const CampaignConfig& config, const CampaignOracle& oracle, std::uint64_t seed,
                              bool record_timeline) {
  detail::CampaignRun run(config, oracle, seed, record_timeline);
  return run.run();
}

}  // namespace megasim::scenarios
