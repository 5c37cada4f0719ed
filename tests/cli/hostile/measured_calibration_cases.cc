// Bad input to `megasim calibrate --measured` (scenarios/studies/calibrate/measured_rows.h,
// measured_calibration_study.h): each refused with exit code 2, a message naming the file, line or
// option, and nothing written.
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";
const std::string kCalibrate = "calibrate " + kSmall + " --measured m.csv";

// `printf` of CSV text into m.csv.
std::string csv(const std::string& text) {
  return "printf '" + text + "' > m.csv";
}

const bool registered = megasim::hostile::register_cases({
    HostileCase{.name = "measured_csv_missing", .args = kCalibrate, .output_has = {"--measured", "m.csv"}},
    HostileCase{.name = "measured_csv_is_folder",
                .args = "calibrate " + kSmall + " --measured .",
                .output_has = {"--measured", "directory"}},
    HostileCase{.name = "measured_csv_is_fifo",
                .args = kCalibrate,
                .output_has = {"m.csv", "FIFO"},
                .setup = "mkfifo m.csv",
                .timeout_s = 20},
    HostileCase{
        .name = "measured_csv_empty", .args = kCalibrate, .output_has = {"m.csv", "no header"}, .setup = csv("")},
    HostileCase{.name = "measured_csv_no_rows",
                .args = kCalibrate,
                .output_has = {"m.csv", "no rows"},
                .setup = csv("cluster.gpus,iteration_time_s\\n")},
    HostileCase{.name = "measured_csv_unknown_key",
                .args = kCalibrate,
                .output_has = {"m.csv:1: column 1", "gpuz"},
                .setup = csv("cluster.gpuz,iteration_time_s\\n64,1\\n")},
    HostileCase{.name = "measured_csv_duplicate_column",
                .args = kCalibrate,
                .output_has = {"m.csv:1: column 2", "each column once"},
                .setup = csv("cluster.gpus,cluster.gpus,iteration_time_s\\n64,64,1\\n")},
    HostileCase{.name = "measured_csv_no_target",
                .args = kCalibrate,
                .output_has = {"iteration_time_s", "mfu"},
                .setup = csv("cluster.gpus\\n64\\n")},
    HostileCase{.name = "measured_csv_target_not_a_number",
                .args = kCalibrate,
                .output_has = {"m.csv:2: iteration_time_s", "fast", "a number"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,fast\\n")},
    HostileCase{.name = "measured_csv_mfu_in_percent",
                .args = kCalibrate,
                .output_has = {"m.csv:2: mfu", "not percent"},
                .setup = csv("cluster.gpus,mfu\\n64,45\\n")},
    HostileCase{.name = "measured_csv_bad_override",
                .args = kCalibrate + " --fit best_gemm_efficiency",
                .output_has = {"m.csv:2 (big)", "cluster.gpus"},
                .setup = csv("name,cluster.gpus,iteration_time_s\\nbig,-3,1\\n")},
    HostileCase{.name = "measured_more_parameters_than_rows",
                .args = kCalibrate + " --fit best_gemm_efficiency,memory_efficiency",
                .output_has = {"--fit", "at most 1 parameter"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n")},
    HostileCase{.name = "measured_unknown_parameter",
                .args = kCalibrate + " --fit gemm_speed",
                .output_has = {"--fit", "gemm_speed", "best_gemm_efficiency"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n")},
    HostileCase{.name = "measured_parameter_twice",
                .args = kCalibrate + " --fit memory_efficiency,memory_efficiency",
                .output_has = {"--fit", "each parameter once"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n32,1\\n")},
    HostileCase{.name = "measured_with_a_backend",
                .args = kCalibrate + " --backend cpu",
                .output_has = {"--backend", "with --measured"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n")},
    HostileCase{.name = "fit_without_measured",
                .args = "calibrate --backend cpu " + kSmall + " --fit memory_efficiency",
                .output_has = {"--fit", "without --measured"}},
    HostileCase{.name = "measured_out_is_folder",
                .args = kCalibrate + " --out .",
                .output_has = {"--out"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n")},
    HostileCase{.name = "measured_predict_missing",
                .args = kCalibrate + " --predict more.csv --fit memory_efficiency",
                .output_has = {"--predict", "more.csv"},
                .setup = csv("cluster.gpus,iteration_time_s\\n64,1\\n")},
});

}  // namespace
