// The campaign engine: one training run over days or weeks of wall time, event by event, with the
// cluster's failure processes (models/reliability.h), checkpoints and recovery. It knows nothing of
// TOML or of how an iteration is simulated: the iteration time of the cluster's current state and
// the stall of a downed cable come from an oracle (the study's runs the iteration simulation and the
// fabric; tests pass closed forms).
//
// The job's life, with every second of wall time in exactly one bucket:
//   training    progress advances at 1 / iteration_time(damage) iterations per second. Of each
//               iteration, the healthy iteration time is work (kept: productive, or later rolled
//               back: lost_work) and the rest is `degraded` (a damaged fabric runs slower) and
//               `drift` (the servers slow down while the job's processes live, until a restart);
//   stall       a downed cable stops the flows on it (oracle.stall_s); the job waits;
//   checkpoint  every `interval_s` of training (whole iterations) the job stops for the blocking
//               save; the upload then runs in the background and the checkpoint counts only when it
//               is done (a job failure before that discards it). A save due while the previous
//               upload still runs waits for it, blocking;
//   recovery    after a job failure: detection, diagnosis, waiting_for_spares (the evicted hosts
//               need as many spares; the job waits while the pool holds fewer), restart
//               (replacement when hosts were evicted, process launch, communicator initialisation),
//               checkpoint_load; then training resumes from the last valid checkpoint and the work
//               since it is lost_work. A job failure during recovery starts recovery again.
// Failures happen at every moment, whatever the job is doing; a flap or a damaged part stalls the
// job only while it trains. A flap whose stall exceeds the NCCL timeout fails the job when the
// timeout fires.
// A damaged part that would partition the fabric (iteration_time_s infinite) is handled as a failed
// ToR is: the flows across the cut never finish, so a training job fails when the NCCL timeout fires
// (the stall timeout, or recovery.nccl_watchdog_s when that is 0: PyTorch's watchdog ends a hung
// collective) and a job in recovery restarts it at once; the hosts cut off (disconnected_hosts) are
// evicted, to be replaced from the spare pool, and come back when the part is repaired. The job then
// runs on the rest of the fabric, which the part no longer touches: it does not count in the damage.
//
// Determinism: each failure process draws from its own named stream ("campaign.<process name>"),
// detection delays and flap durations from theirs, all from the seed given, and simultaneous events
// run in the order they were scheduled.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "models/reliability.h"

namespace megasim::scenarios {

// Parts of the fabric that failed and are routed around until repaired.
struct FabricDamage {
  // Failed ToR-aggregation cables, aggregation-core cables, aggregation switches, core switches.
  std::array<std::int32_t, 4> failed{};
  [[nodiscard]] bool healthy() const { return failed == std::array<std::int32_t, 4>{}; }
  auto operator<=>(const FabricDamage&) const = default;
};
// The slot of FabricDamage::failed a kDamage process counts in.
std::size_t damage_slot(const models::FailureProcess& process);

struct CampaignOracle {
  // Seconds of one iteration on the fabric with this damage (> 0); {} is the healthy cluster.
  // Infinity: the damage partitions the fabric, and the job cannot train on it (below).
  std::function<double(const FabricDamage&)> iteration_time_s;
  // Seconds the flows crossing a cable of this tier stall when it is down for down_s seconds.
  std::function<double(models::FabricTier, double down_s)> stall_s;
  // The iteration time's multiple (> 0) after uptime_s seconds since the job's processes started
  // (drift); unset: 1. The engine asks for it at the middle of each drift step (CampaignConfig).
  std::function<double(double uptime_s)> drift_factor;
  // The hosts a partitioning damage cuts off (> 0); needed when iteration_time_s can be infinite.
  std::function<std::int64_t(const FabricDamage&)> disconnected_hosts;
};

struct CampaignConfig {
  double horizon_s = 0;                           // wall time simulated
  std::vector<models::FailureProcess> processes;  // models::failure_processes()
  models::FailureParams failures;                 // flap durations
  models::RecoveryParams recovery;
  models::CheckpointParams checkpoint;
  std::int64_t job_gpus = 0;   // communicator initialisation
  double stall_timeout_s = 0;  // NCCL timeout; 0: a stall never fails the job
  // The iteration time follows the drift in steps of this many seconds of uptime, each at the
  // drift factor of the step's middle; 0: no drift. Uptime counts from the campaign's start and
  // from each restart (processes launched, before the checkpoint load).
  double drift_step_s = 0;
};

enum class LostCause : std::uint8_t {
  kLostWork,  // work since the last valid checkpoint, rolled back by a job failure
  kDetection,
  kDiagnosis,
  kWaitingForSpares,
  kRestart,  // replacement, process launch, communicator initialisation
  kCheckpointLoad,
  kCheckpointSave,  // blocking saves (and waiting for the previous upload)
  kStall,           // flows stalled by a downed cable
  kDegraded,        // training slower than healthy on a damaged fabric
  kDrift,           // training slower than at the job's start (drift since the last restart)
};
inline constexpr std::size_t kLostCauseCount = 10;
std::string_view to_string(LostCause c);  // "lost_work", "detection", ..., "degraded", "drift"

struct TimelineEvent {
  double time_s = 0;
  std::string_view kind;  // failure, flap, stall, partitioned, job_failed, detected, diagnosed,
                          // waiting_for_spares, replaced, restarted, resumed, checkpoint_saved,
                          // checkpoint_valid, checkpoint_discarded, repaired
  std::string_view what;  // the process name, or "" when there is none
  double value = 0;       // seconds (flap, stall), hosts (partitioned, replaced, waiting), iterations (checkpoints)
};

struct SeedOutcome {
  double ettr = 0;          // productive_s / horizon
  double productive_s = 0;  // iterations kept at the end x healthy iteration time
  std::array<double, kLostCauseCount> lost_s{};
  std::array<std::int64_t, models::kComponentCount> failures{};  // component failures (flaps not counted)
  std::int64_t flaps = 0;
  std::int64_t job_failures = 0;        // failures that ended the job (or restarted its recovery)
  std::int64_t checkpoints = 0;         // checkpoints that became valid
  double iterations = 0;                // kept at the end
  std::vector<TimelineEvent> timeline;  // only when asked for
};

// Runs one campaign. Preconditions (asserted): horizon > 0, oracle.iteration_time_s({}) > 0.
SeedOutcome run_campaign_seed(const CampaignConfig& config, const CampaignOracle& oracle, std::uint64_t seed,
                              bool record_timeline);

}  // namespace megasim::scenarios
