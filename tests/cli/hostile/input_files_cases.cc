// Hostile input files (scenarios/config/input_file.h): a folder, a device, a FIFO, a link to one,
// or a file above the bound where a scenario, a calibration file or a trace is read. Each was
// accepted before: a folder or /dev/stdin read as an empty file and ran the built-in defaults,
// /dev/zero grew without bound, a FIFO blocked the open forever, a 70 MB file of comments was
// parsed whole.
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";
// A scenario file whose [calibration] names `calibration`, on the small job.
const std::string kCalibrated = "[calibration]\nfile = \"calibration\"\n";
// 70 MB (above the 64 MiB bound) of TOML comments: valid, and nothing but the size is wrong.
const std::string kHugeFile = "yes '# a comment line of a generated file' | head -c 70000000 > ";

const bool registered = megasim::hostile::register_cases({
    // Scenario files.
    HostileCase{.name = "scenario_empty_path", .args = "run ''", .output_has = {"scenario", "\"\""}},
    HostileCase{.name = "scenario_is_folder", .args = "run .", .output_has = {"scenario", "directory"}},
    HostileCase{.name = "scenario_is_dev_zero",
                .args = "plan /dev/zero",
                .output_has = {"/dev/zero", "character device"},
                .timeout_s = 20},
    HostileCase{.name = "scenario_is_dev_stdin",
                .args = "plan /dev/stdin < /dev/null",
                .output_has = {"/dev/stdin", "character device"}},
    HostileCase{.name = "scenario_is_fifo",
                .args = "plan s.toml",
                .output_has = {"s.toml", "FIFO"},
                .setup = "mkfifo s.toml",
                .timeout_s = 20},
    HostileCase{.name = "scenario_link_to_fifo",
                .args = "run s.toml",
                .output_has = {"s.toml", "FIFO"},
                .setup = "mkfifo f && ln -s f s.toml",
                .timeout_s = 20},
    HostileCase{.name = "scenario_too_large",
                .args = "plan big.toml",
                .output_has = {"big.toml", "at most 64 MiB"},
                .setup = kHugeFile + "big.toml"},
    HostileCase{.name = "sweep_scenario_is_folder", .args = "sweep . --top 1", .output_has = {"directory"}},
    HostileCase{.name = "campaign_scenario_is_dev_zero",
                .args = "campaign /dev/zero --days 1",
                .output_has = {"character device"},
                .timeout_s = 20},
    HostileCase{.name = "topo_scenario_is_fifo",
                .args = "topo s.toml",
                .output_has = {"FIFO"},
                .setup = "mkfifo s.toml",
                .timeout_s = 20},
    // Calibration files, named by --set or in the scenario (found next to it).
    HostileCase{.name = "calibration_file_is_folder",
                .args = "run " + kSmall + " --set calibration.file=.",
                .output_has = {"calibration.file", "directory"}},
    HostileCase{.name = "calibration_file_is_dev_zero",
                .args = "run " + kSmall + " --set calibration.file=/dev/zero",
                .output_has = {"calibration.file", "character device"},
                .timeout_s = 20},
    HostileCase{.name = "calibration_file_is_fifo",
                .args = "run " + kSmall + " --set calibration.file=cal.toml",
                .output_has = {"calibration.file", "FIFO"},
                .setup = "mkfifo cal.toml",
                .timeout_s = 20},
    HostileCase{.name = "calibration_file_too_large",
                .args = "run " + kSmall + " --set calibration.file=cal.toml",
                .output_has = {"calibration.file", "at most 64 MiB"},
                .setup = kHugeFile + "cal.toml"},
    HostileCase{.name = "calibration_file_in_toml_is_folder",
                .args = "run {S}",
                .toml = kCalibrated,
                .output_has = {"calibration.file", "directory"},
                .setup = "mkdir calibration"},
    HostileCase{.name = "calibration_file_in_toml_links_to_dev_zero",
                .args = "run {S}",
                .toml = kCalibrated,
                .output_has = {"calibration.file", "character device"},
                .setup = "ln -s /dev/zero calibration",
                .timeout_s = 20},
    // Traces read back by whatif (memory-mapped: a FIFO blocked the open).
    HostileCase{.name = "whatif_trace_is_fifo",
                .args = "whatif trace.json",
                .output_has = {"trace.json", "FIFO"},
                .setup = "mkfifo trace.json",
                .timeout_s = 20},
    HostileCase{.name = "whatif_trace_link_to_fifo",
                .args = "whatif trace.json",
                .output_has = {"FIFO"},
                .setup = "mkfifo f && ln -s f trace.json",
                .timeout_s = 20},
    HostileCase{.name = "whatif_trace_empty_path", .args = "whatif ''", .output_has = {"trace", "\"\""}},
});

}  // namespace
