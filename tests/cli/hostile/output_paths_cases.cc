// Hostile output paths (scenarios/config/output_files.h): empty paths, FIFOs, folders and links
// where a file goes, a file-size limit hit mid-write, two outputs into one file, and a standard
// output that cannot take the report. Each was accepted before: a FIFO or link was replaced by a
// regular file, an empty path silently wrote nothing, a write past `ulimit -f` killed megasim
// (SIGXFSZ) with report.json written and trace.json half-written, a full stdout exited 0.
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

// A 64-GPU job whose iteration simulates in milliseconds.
const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";
// The shipped CPU validation plan, with the shipped calibration (validate refuses --out before it runs).
const std::string kValidate = std::string(MEGASIM_SOURCE_DIR) +
                              "/scenarios/validate/tiny_gpt_dp2.toml --set calibration.file=" + MEGASIM_SOURCE_DIR +
                              "/scenarios/calibration/cpu_amd_epyc_tiny_gpt_dp2.toml";

const bool registered = megasim::hostile::register_cases({
    // Empty paths: an unset shell variable (`--out "$DIR"`) must not read as "no output".
    HostileCase{.name = "run_out_empty", .args = "run " + kSmall + " --out ''", .output_has = {"--out", "\"\""}},
    HostileCase{.name = "sweep_csv_empty", .args = "sweep " + kSmall + " --csv ''", .output_has = {"--csv"}},
    HostileCase{
        .name = "topo_write_json_empty", .args = "topo " + kSmall + " --write-json ''", .output_has = {"--write-json"}},
    HostileCase{.name = "calibrate_out_empty",
                .args = "calibrate --backend cpu " + kSmall + " --out ''",
                .output_has = {"--out"}},
    // A FIFO (or any non-regular file) where a file goes is refused, not replaced.
    HostileCase{.name = "sweep_csv_is_fifo",
                .args = "sweep " + kSmall + " --csv out.csv",
                .output_has = {"--csv", "out.csv", "FIFO"},
                .setup = "mkfifo out.csv"},
    HostileCase{.name = "topo_write_json_is_fifo",
                .args = "topo " + kSmall + " --write-json graph.json",
                .output_has = {"--write-json", "FIFO"},
                .setup = "mkfifo graph.json"},
    HostileCase{.name = "topo_write_dot_is_fifo",
                .args = "topo " + kSmall + " --write-dot graph.dot",
                .output_has = {"--write-dot", "FIFO"},
                .setup = "mkfifo graph.dot"},
    HostileCase{.name = "calibrate_out_is_fifo",
                .args = "calibrate --backend cpu " + kSmall + " --out cal.toml",
                .output_has = {"--out", "FIFO"},
                .setup = "mkfifo cal.toml"},
    HostileCase{.name = "run_out_report_is_fifo",
                .args = "run " + kSmall + " --out out",
                .output_has = {"out/report.json", "FIFO"},
                .setup = "mkdir out && mkfifo out/report.json"},
    HostileCase{.name = "run_out_trace_is_fifo",
                .args = "run " + kSmall + " --out out",
                .output_has = {"out/trace.json", "FIFO"},
                .setup = "mkdir out && mkfifo out/trace.json"},
    // trace.json a folder: refused before the run, so report.json is not written either.
    HostileCase{.name = "run_out_trace_is_folder",
                .args = "run " + kSmall + " --out out",
                .output_has = {"out/trace.json", "directory"},
                .setup = "mkdir -p out/trace.json"},
    HostileCase{.name = "run_out_is_regular_file",
                .args = "run " + kSmall + " --out out",
                .output_has = {"--out", "regular file"},
                .setup = "echo keep > out"},
    HostileCase{.name = "run_out_is_fifo",
                .args = "run " + kSmall + " --out out",
                .output_has = {"--out", "FIFO"},
                .setup = "mkfifo out"},
    // validate --out: checked before any process starts (its three files appear together or not at all).
    HostileCase{.name = "validate_out_is_regular_file",
                .args = "validate " + kValidate + " --out out",
                .output_has = {"--out", "regular file"},
                .setup = "echo keep > out"},
    HostileCase{.name = "validate_out_json_is_fifo",
                .args = "validate " + kValidate + " --out out",
                .output_has = {"out/validation.json", "FIFO"},
                .setup = "mkdir out && mkfifo out/validation.json"},
    // Links: one to a regular file is written through (below); others are refused, the link kept.
    HostileCase{.name = "sweep_csv_dangling_link",
                .args = "sweep " + kSmall + " --csv out.csv",
                .output_has = {"--csv", "link"},
                .setup = "ln -s missing/rows.csv out.csv"},
    HostileCase{.name = "sweep_csv_link_to_fifo",
                .args = "sweep " + kSmall + " --csv out.csv",
                .output_has = {"--csv", "FIFO", "through a link"},
                .setup = "mkfifo rows && ln -s rows out.csv"},
    HostileCase{.name = "sweep_csv_link_to_folder",
                .args = "sweep " + kSmall + " --csv out.csv",
                .output_has = {"--csv", "directory"},
                .setup = "mkdir rows && ln -s rows out.csv"},
    HostileCase{.name = "run_out_report_link_written_through",
                .args = "run " + kSmall + " --out out",
                .setup = "echo old > kept.json && mkdir out && ln -s ../kept.json out/report.json",
                .check = "test -L out/report.json && grep -q iteration_time_s kept.json && test -f out/trace.json",
                .exit_code = 0,
                .may_write = true},
    HostileCase{.name = "topo_write_json_link_written_through",
                .args = "topo " + kSmall + " --write-json graph.json",
                .setup = "echo old > real.json && ln -s real.json graph.json",
                .check = "test -L graph.json && grep -q nodes real.json && test $(ls | wc -l) -eq 2",
                .exit_code = 0,
                .may_write = true},
    // Two outputs into one file.
    HostileCase{.name = "topo_json_and_dot_one_file",
                .args = "topo " + kSmall + " --write-json graph --write-dot graph",
                .output_has = {"--write-dot", "graph", "--write-json"}},
    HostileCase{.name = "topo_json_and_dot_one_file_by_link",
                .args = "topo " + kSmall + " --write-json graph --write-dot alias",
                .output_has = {"--write-dot", "alias"},
                .setup = "echo old > graph && ln -s graph alias"},
    // A file-size limit reached mid-write: an error, nothing left (the folder --out made included).
    HostileCase{.name = "run_out_over_file_size_limit",
                .args = "run " + kSmall + " --out out",
                .output_has = {"--out", "out/trace.json", "too large"},
                .ulimit = "-f 64"},
    HostileCase{.name = "run_out_over_file_size_limit_keeps_old_files",
                .args = "run " + kSmall + " --out out",
                .output_has = {"too large"},
                .setup = "mkdir out && echo old > out/report.json && echo old > out/trace.json",
                .check = "test \"$(cat out/report.json out/trace.json)\" = \"$(printf 'old\\nold')\"",
                .ulimit = "-f 64"},
    HostileCase{.name = "topo_write_json_over_file_size_limit",
                .args = "topo " + kSmall + " --write-json graph.json",
                .output_has = {"--write-json", "too large"},
                .ulimit = "-f 2"},
    // A standard output that cannot take the report.
    HostileCase{.name = "run_json_to_full_stdout",
                .args = "run " + kSmall + " --json > /dev/full",
                .output_has = {"standard output", "could not be written"}},
    HostileCase{.name = "keys_to_full_stdout", .args = "keys > /dev/full", .output_has = {"standard output"}},
    HostileCase{
        .name = "plan_to_full_stdout", .args = "plan " + kSmall + " > /dev/full", .output_has = {"standard output"}},
    HostileCase{.name = "topo_to_full_stdout",
                .args = "topo " + kSmall + " --json > /dev/full",
                .output_has = {"standard output"}},
    HostileCase{.name = "collective_to_full_stdout",
                .args = "collective " + kSmall + " --bytes 1MiB > /dev/full",
                .output_has = {"standard output"}},
    HostileCase{.name = "sweep_to_full_stdout",
                .args = "sweep " + kSmall + " --top 1 > /dev/full",
                .output_has = {"standard output"}},
});

}  // namespace
