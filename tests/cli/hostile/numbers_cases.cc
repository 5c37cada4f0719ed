// Hostile numbers: values outside every physical range, on keys and options, in TOML and on the
// command line; integers beyond 64 bits (refused, not clamped); values in range whose combination
// overflows simulated time. Every case once crashed (an abort on "an event was scheduled in the
// past" or another MEGASIM_ASSERT), ran with a wrapped or clamped value, or was accepted silently
// (scripts/hostile_numbers.py lists such inputs for every numeric key).
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

// tests/data/campaign_small.toml without [simulation], [failures] and [checkpoint], which cases add.
const std::string kSmall = R"([cluster]
gpu = "A100-SXM-80GB"
gpus = 64
gpus_per_server = 2
rails = 2
switch_radix = 8
tor_downlink_split = 2
servers_per_group = 8
[fabric]
stall_timeout_s = 7.5
[model]
num_layers = 4
hidden_size = 1024
num_attention_heads = 16
seq_length = 1024
vocab_size = 32000
[plan]
tensor_model_parallel_size = 2
pipeline_model_parallel_size = 2
num_layers_per_virtual_pipeline_stage = 0
micro_batch_size = 1
global_batch_size = 64
)";

// `command` (with {S}) --set `assignment`; the output names `key` and `range`.
HostileCase set(std::string name, std::string command, std::string assignment, std::string key, std::string range) {
  return HostileCase{.name = std::move(name),
                     .args = command + " --set " + assignment,
                     .toml = kSmall,
                     .output_has = {std::move(key), std::move(range)}};
}

HostileCase toml(std::string name, std::string command, std::string extra, std::vector<std::string> output_has) {
  return HostileCase{
      .name = std::move(name), .args = command, .toml = kSmall + extra, .output_has = std::move(output_has)};
}

const std::string kCollective = "collective {S} --bytes 1MiB --gpus 16";
const std::string kCollectiveOf = "collective {S} --gpus 16 --bytes";

const bool registered = megasim::hostile::register_cases({
    // Each of these aborted ("an event was scheduled in the past", "stall check of a moving or
    // finished flow", "a max-min flow needs at least one link", "link capacity must be finite").
    set("nic_speed_1e_300", "run {S}", "cluster.nic_gbps=1e-300", "cluster.nic_gbps",
        "0, or a number from 0.01 to 100000 Gb/s"),
    set("nvlink_speed_1e_300", "run {S}", "cluster.nvlink_gbytes_per_s=1e-300", "cluster.nvlink_gbytes_per_s",
        "from 0.001"),
    set("nvlink_speed_1e300_collective", kCollective, "cluster.nvlink_gbytes_per_s=1e300",
        "cluster.nvlink_gbytes_per_s", "to 100000 GB/s"),
    set("switch_speed_1e300_campaign", "campaign {S} --days 1", "cluster.switch_port_gbps=1e300",
        "cluster.switch_port_gbps", "from 0.01 to 100000 Gb/s"),
    set("network_efficiency_1e_300", "run {S}", "fabric.network_efficiency=1e-300", "fabric.network_efficiency",
        "a number from 0.01 to 1"),
    set("nvlink_efficiency_1e_300", kCollective, "fabric.nvlink_efficiency=1e-300", "fabric.nvlink_efficiency",
        "a number from 0.01 to 1"),
    set("reduction_rate_1e_300", "run {S}", "collective.reduction_gbytes_per_s=1e-300",
        "collective.reduction_gbytes_per_s", "0, or a number from 0.001"),
    set("micro_batch_int64_max", "run {S}", "plan.micro_batch_size=9223372036854775807", "plan.micro_batch_size",
        "an integer from 1 to 16777216"),
    // A latency of INT64_MAX ns wrapped silently to a wrong answer (exit 0).
    set("link_latency_int64_max", "run {S}", "cluster.link_latency_ns=9223372036854775807", "cluster.link_latency_ns",
        "an integer from 0 to 100000000 ns"),
    set("nvlink_latency_int64_max", kCollective, "cluster.nvlink_latency_ns=9223372036854775807",
        "cluster.nvlink_latency_ns", "an integer from 0 to 1000000 ns"),
    set("collective_latency_a_year", "run {S}", "collective.net_step_latency_us=3.2e13",
        "collective.net_step_latency_us", "to 1000000 us"),
    // Accepted silently by `run`, whatever the command (the range is the key's, not the study's).
    set("failure_rate_scale_negative_run", "run {S}", "failures.rate_scale=-1", "failures.rate_scale",
        "from 0 to 1000000"),
    set("slow_host_factor_1e300", "run {S}", "stragglers.slow_host_factor=1e300", "stragglers.slow_host_factor",
        "from 1 to 1000"),
    set("gc_period_1e300", "run {S}", "stragglers.gc_period_s=1e300", "stragglers.gc_period_s", "from 0 to 86400 s"),
    toml("mtbf_nan_in_toml", "run {S}", "[failures]\ngpu_mtbf_h = nan\n",
         {"failures.gpu_mtbf_h = nan", "0, or a number"}),
    toml("mtbf_inf_in_toml", "campaign {S} --days 1", "[failures]\nlink_mtbf_h = inf\n",
         {"failures.link_mtbf_h = inf"}),
    toml("checkpoint_interval_inf_in_toml", "campaign {S} --days 1", "[checkpoint]\ninterval_s = inf\n",
         {"checkpoint.interval_s = inf"}),
    // Integers beyond 64 bits: refused, not clamped to INT64_MAX.
    set("seed_2_64_set", "run {S}", "simulation.seed=18446744073709551616", "simulation.seed",
        "from 0 to 9223372036854775807"),
    toml("seed_2_64_in_toml", "run {S}", "[simulation]\nseed = 18446744073709551616\n",
         {"not representable in 64 bits", "simulation.seed"}),
    HostileCase{.name = "seed_option_2_64",
                .args = "run {S} --seed 18446744073709551616",
                .toml = kSmall,
                .output_has = {"--seed", "from 0 to 9223372036854775807"}},
    HostileCase{
        .name = "seed_option_octal", .args = "run {S} --seed 010", .toml = kSmall, .output_has = {"--seed", "base-10"}},
    HostileCase{.name = "trace_ranks_beyond_64_bits",
                .args = "run {S} --out out --trace-ranks 99999999999999999999",
                .toml = kSmall,
                .output_has = {"--trace-ranks"}},
    HostileCase{.name = "timeline_lines_2_64",
                .args = "campaign {S} --days 1 --timeline-lines 18446744073709551616",
                .toml = kSmall,
                .output_has = {"--timeline-lines"}},
    HostileCase{.name = "sweep_top_minus_one",
                .args = "sweep {S} --top -1",
                .toml = kSmall,
                .output_has = {"--top", "from 0 to 1000000"}},
    // A campaign of 1e-300 days ran and reported an ETTR of 0.
    HostileCase{.name = "campaign_days_1e_300",
                .args = "campaign {S} --days 1e-300",
                .toml = kSmall,
                .output_has = {"--days", "a second"}},
    // Byte counts: whole bytes from 1 to 2^50.
    HostileCase{.name = "bytes_half",
                .args = kCollectiveOf + " 0.5",
                .toml = kSmall,
                .output_has = {"--bytes", "a whole number of bytes"}},
    HostileCase{.name = "bytes_1e_300", .args = kCollectiveOf + " 1e-300", .toml = kSmall, .output_has = {"--bytes"}},
    HostileCase{.name = "bytes_2_64",
                .args = kCollectiveOf + " 18446744073709551616",
                .toml = kSmall,
                .output_has = {"--bytes", "1 PiB"}},
    // Values in range whose combination would end past the simulator's 146 years: a 1e15-byte
    // collective over 10 Mb/s NICs at 1% efficiency (12,500 B/s) takes 8e10 s.
    HostileCase{.name = "time_overflow_flow",
                .args = "collective {S} --gpus 16 --bytes 1000TB --set cluster.nic_gbps=0.01 "
                        "--set fabric.network_efficiency=0.01",
                .toml = kSmall,
                .output_has = {"simulated time overflows: a flow's end", "cluster.nic_gbps"}},
    // A calibration whose GEMMs run at 1e-300 of peak: the compute tasks would take 1e290 s.
    HostileCase{
        .name = "time_overflow_compute",
        .args = "run {S} --set calibration.file=calib.toml",
        .toml = kSmall,
        .output_has = {"simulated time overflows: a compute task's duration"},
        .setup = "printf '[compute]\\nbest_gemm_efficiency = 1e-300\\nmemory_efficiency = 1e-300\\n' > calib.toml"},
});

}  // namespace
