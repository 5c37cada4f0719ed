// The public surface of megasim for the CLI and the Python bindings (STYLE.md §2): scenarios and
// their keys, loading and overrides, and the studies with their report writers.
#pragma once

#include "scenarios/config/keys.h"                                   // IWYU pragma: export
#include "scenarios/config/keys_json.h"                              // IWYU pragma: export
#include "scenarios/config/loader.h"                                 // IWYU pragma: export
#include "scenarios/config/scenario.h"                               // IWYU pragma: export
#include "scenarios/config/units.h"                                  // IWYU pragma: export
#include "scenarios/report/perfetto_trace.h"                         // IWYU pragma: export
#include "scenarios/report/topology_report.h"                        // IWYU pragma: export
#include "scenarios/studies/calibrate/measured_calibration_study.h"  // IWYU pragma: export
#include "scenarios/studies/campaign/campaign_phases.h"              // IWYU pragma: export
#include "scenarios/studies/campaign/campaign_report.h"              // IWYU pragma: export
#include "scenarios/studies/campaign/campaign_study.h"               // IWYU pragma: export
#include "scenarios/studies/collective_study.h"                      // IWYU pragma: export
#include "scenarios/studies/explain_study.h"                         // IWYU pragma: export
#include "scenarios/studies/plan_study.h"                            // IWYU pragma: export
#include "scenarios/studies/run_study.h"                             // IWYU pragma: export
#include "scenarios/studies/samples_study.h"                         // IWYU pragma: export
#include "scenarios/studies/sweep/sweep_study.h"                     // IWYU pragma: export
#include "scenarios/studies/whatif_study.h"                          // IWYU pragma: export
