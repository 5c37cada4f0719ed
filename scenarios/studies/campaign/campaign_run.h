// Internal: the state machine of one campaign (campaign_engine.h describes its rules). Training and
// checkpoints are in campaign_engine.cc, failures and recovery in campaign_recovery.cc.
#pragma once

#include <cstdint>
#include <vector>

#include "scenarios/studies/campaign/campaign_engine.h"
#include "sim/rng.h"
#include "sim/simulator.h"

namespace megasim::scenarios::detail {

enum class Phase : std::uint8_t {
  kTraining,
  kStalled,
  kSaving,
  kWaitingForUpload,
  kDetecting,
  kDiagnosing,
  kWaitingForSpares,
  kReplacing,
  kRestarting,
  kLoading,
};

class CampaignRun {
 public:
  CampaignRun(const CampaignConfig& config, const CampaignOracle& oracle, std::uint64_t seed, bool record);
  SeedOutcome run();

 private:
  // campaign_engine.cc: phases, training, checkpoints.
  void enter(Phase next);
  void settle();
  void schedule_phase_end(double seconds, void (CampaignRun::*handler)());
  void resume_training();
  void schedule_save();
  void on_save_due();
  void start_save();
  void on_save_done();
  void on_upload_done();
  void set_damage(std::size_t slot, int delta);
  void stall(double seconds);
  void on_stall_end();
  void restart_drift();
  void on_drift_step();
  void update_iteration_time();
  void log(std::string_view kind, std::string_view what = {}, double value = 0);
  [[nodiscard]] sim::SimTime delay(double seconds, bool round_up = false) const;
  [[nodiscard]] bool running() const;
  double& lost(LostCause c) { return out_.lost_s[static_cast<std::size_t>(c)]; }

  // campaign_recovery.cc: failures and recovery.
  void schedule_next_failure(std::size_t process);
  void on_failure(std::size_t process);
  void on_network_outage(const models::FailureProcess& p, double down_s);
  void on_partition(const models::FailureProcess& p, const FabricDamage& partitioned);
  void fail_job(const models::FailureProcess& p);
  [[nodiscard]] double detection_delay_s(bool network);
  void on_detected();
  void on_diagnosed();
  void take_spares();
  void on_replaced();
  void on_restarted();
  void on_loaded();
  void on_hosts_back(std::int64_t hosts);

  const CampaignConfig& config_;
  const CampaignOracle& oracle_;
  sim::Simulator sim_;
  sim::RngStreams streams_;
  std::vector<sim::Rng> process_rngs_;
  sim::Rng detection_rng_;
  sim::Rng flap_rng_;
  bool record_;
  SeedOutcome out_;

  double healthy_s_ = 0;  // healthy iteration time
  double damaged_s_ = 0;  // iteration time of the current damage
  double drift_ = 1;      // the drift factor of the current step
  double current_s_ = 0;  // damaged_s_ x drift_
  FabricDamage damage_;
  std::int64_t drift_step_ = 0;  // steps since the processes started
  sim::SimTime processes_started_ = 0;
  sim::EventHandle drift_event_;

  Phase phase_ = Phase::kTraining;
  sim::SimTime phase_start_ = 0;
  sim::EventHandle phase_event_;  // the end of the current phase (save due while training)
  sim::SimTime stall_until_ = 0;
  sim::EventHandle fatal_event_;  // a stall past the NCCL timeout
  const models::FailureProcess* fatal_process_ = nullptr;

  double progress_ = 0;  // iterations
  sim::SimTime settled_at_ = 0;
  double valid_progress_ = 0;  // the last valid checkpoint
  double next_save_progress_ = 0;
  double iterations_per_save_ = 1;
  bool upload_pending_ = false;
  double upload_progress_ = 0;
  sim::EventHandle upload_event_;

  std::int64_t spare_pool_ = 0;
  std::int64_t hosts_to_replace_ = 0;
};

}  // namespace megasim::scenarios::detail
