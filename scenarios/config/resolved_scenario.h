// A scenario resolved once, at the top of a study, and handed down (DESIGN.md's one data flow): its
// device (the calibration file read and parsed once and applied over the defaults, the cluster's
// link rates filled in), its plan resolved against the cluster and that plan's memory estimate.
// The model steps (the workload), the backend (topology, placement, stragglers, execution) and the
// report take what they need from it; nothing below reads the scenario's files again.
#pragma once

#include "models/memory.h"
#include "models/plan.h"
#include "scenarios/config/device.h"
#include "scenarios/config/scenario.h"

namespace megasim::scenarios {

struct ResolvedScenario {
  Scenario scenario;
  DeviceModel device;
  models::ResolvedPlan plan;
  models::MemoryEstimate memory;  // per GPU, of `plan`; whether it fits is the study's to decide
};

// Checks the scenario against its device (validate(scenario, device), scenario.h) and resolves its
// plan. Throws sim::ConfigError for an invalid scenario, an unreadable calibration file or an
// impossible plan (TP not dividing the heads, layers not divisible by PP x VPP, ...); a plan that
// does not fit in the GPU's memory is not an error here (models::require_fits is the run's check).
ResolvedScenario resolve(Scenario scenario);

}  // namespace megasim::scenarios
