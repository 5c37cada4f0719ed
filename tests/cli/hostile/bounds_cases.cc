// Memory and time bounds: inputs whose work grows without limit (micro-batches per iteration, queue
// pairs per connection, failure events and checkpoints per campaign, sweep candidates) are refused
// with exit code 2 and the bound before anything is allocated. Each once grew until the machine ran
// out of memory or the run was killed.
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

// tests/data/campaign_small.toml: 64 GPUs, a 4-layer GPT, TP 2 x PP 2 x DP 16; an iteration of about
// 26 ms; failures at 50 times the public rates.
const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";

const bool registered = megasim::hostile::register_cases({
    // 2^30 samples: outside plan.global_batch_size's range (at most 2^24).
    HostileCase{.name = "global_batch_2_30",
                .args = "run " + kSmall + " --set plan.global_batch_size=1073741824",
                .output_has = {"plan.global_batch_size = 1073741824", "from 1 to 16777216"}},
    // 2^24 samples in range: 2^20 micro-batches per replica, 16 replicas x 2 stages x 6.3 million
    // tasks = 2e8 task records, past the 2^27 any simulation may have (whatever the machine's memory).
    HostileCase{.name = "global_batch_2_24_task_records",
                .args = "run " + kSmall + " --set plan.global_batch_size=16777216",
                .output_has = {"plan.global_batch_size = 16777216", "at most 134217728 task records"}},
    // The same through the sweep, whose screen builds every plan's workload.
    HostileCase{.name = "global_batch_2_24_sweep",
                .args = "sweep " + kSmall + " --set plan.global_batch_size=16777216 --max-micro-batch 1",
                .output_has = {"plan.global_batch_size = 16777216", "task records"}},
    HostileCase{.name = "qps_per_connection_million",
                .args = "run " + kSmall + " --set fabric.qps_per_connection=1000000",
                .output_has = {"fabric.qps_per_connection = 1000000", "from 1 to 128"}},
    HostileCase{.name = "failure_rate_scale_1e9",
                .args = "campaign " + kSmall + " --days 1 --set failures.rate_scale=1e9",
                .output_has = {"failures.rate_scale", "from 0 to 1000000"}},
    // In range, but a million times the public rates on 64 GPUs: millions of failures a month.
    HostileCase{.name = "failure_rate_scale_1e6_month",
                .args = "campaign " + kSmall + " --days 30 --set failures.rate_scale=1000000",
                .output_has = {"failures.rate_scale = 1000000", "expected failures and flaps", "events per seed"}},
    HostileCase{.name = "mtbf_of_a_few_seconds",
                .args = "campaign " + kSmall + " --days 1 --set failures.gpu_mtbf_h=0.001",
                .output_has = {"failures.rate_scale", "the most frequent: gpu"}},
    HostileCase{.name = "mtbf_1e_300",
                .args = "campaign " + kSmall + " --days 1 --set failures.software_mtbf_h=1e-300",
                .output_has = {"failures.software_mtbf_h", "0, or a number from 0.001"}},
    // A save every millisecond for ten years: 1.2e10 checkpoints (at least one iteration apart).
    HostileCase{.name = "checkpoint_every_millisecond",
                .args = "campaign " + kSmall + " --days 3650 --seeds 1 --set checkpoint.interval_s=0.001",
                .output_has = {"checkpoint.interval_s = 0.001", "checkpoints per seed"}},
    // 4,096 x 4,096 points of two varied keys: 16.8 million before any plan is enumerated.
    HostileCase{.name = "sweep_cross_product",
                .args = "sweep " + kSmall + " --vary model.vocab_size=1..4096:1 --vary model.seq_length=1..4096:1",
                .output_has = {"--vary", "at most 250000 points"}},
});

}  // namespace
