// The public surface of megasim for the CLI and the Python bindings (STYLE.md §2): scenarios and
// their keys, loading and overrides, and the studies with their report writers.
#pragma once

#include "scenarios/campaign_report.h"             // IWYU pragma: export
#include "scenarios/campaign_study.h"              // IWYU pragma: export
#include "scenarios/collective_study.h"            // IWYU pragma: export
#include "scenarios/explain_study.h"               // IWYU pragma: export
#include "scenarios/keys.h"                        // IWYU pragma: export
#include "scenarios/keys_json.h"                   // IWYU pragma: export
#include "scenarios/loader.h"                      // IWYU pragma: export
#include "scenarios/measured_calibration_study.h"  // IWYU pragma: export
#include "scenarios/perfetto_trace.h"              // IWYU pragma: export
#include "scenarios/plan_study.h"                  // IWYU pragma: export
#include "scenarios/run_study.h"                   // IWYU pragma: export
#include "scenarios/samples_study.h"               // IWYU pragma: export
#include "scenarios/scenario.h"                    // IWYU pragma: export
#include "scenarios/sweep_study.h"                 // IWYU pragma: export
#include "scenarios/topology_report.h"             // IWYU pragma: export
#include "scenarios/units.h"                       // IWYU pragma: export
#include "scenarios/whatif_study.h"                // IWYU pragma: export
