// Options that do nothing where they are given are refused (exit 2, naming the option and the
// context), not ignored: each of these ran to exit 0 before, the option silently without effect.
// Refusals come before any output, so nothing is written either.
#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

// A small pipelined plan that simulates in milliseconds (8 GPUs, TP 2 x PP 2 x DP 2).
const char* const kSmallPlan =
    "--set cluster.gpus=8 --set plan.tensor_model_parallel_size=2 --set plan.pipeline_model_parallel_size=2 "
    "--set model.num_layers=4 --set plan.num_layers_per_virtual_pipeline_stage=0 --set plan.global_batch_size=8";

std::string small(const std::string& args) {
  return args + " " + kSmallPlan;
}

const bool registered = megasim::hostile::register_cases({
    // run: measurement options with the simulator, trace options without a trace.
    HostileCase{.name = "run_iterations_with_the_simulator",
                .args = small("run --iterations 5"),
                .output_has = {"megasim: error: --iterations = 5", "--backend sim"}},
    HostileCase{.name = "run_timeout_with_the_simulator",
                .args = small("run --backend sim --timeout 10"),
                .output_has = {"--timeout = 10", "--backend sim"}},
    HostileCase{.name = "run_trace_ranks_without_out",
                .args = small("run --trace-ranks 0,1"),
                .output_has = {"--trace-ranks = 0,1", "without --out"}},
    HostileCase{.name = "run_max_trace_ranks_without_out",
                .args = small("run --max-trace-ranks 0"),
                .output_has = {"--max-trace-ranks = 0", "without --out"}},
    HostileCase{.name = "run_max_trace_ranks_with_a_rank_list",
                .args = small("run --out out --trace-ranks 0 --max-trace-ranks 1"),
                .output_has = {"--max-trace-ranks", "with --trace-ranks"}},
    // A shorthand next to a --set of the same key: one of the two was silently overridden.
    HostileCase{.name = "plan_gpus_and_set_cluster_gpus",
                .args = "plan --gpus 16 --set cluster.gpus=8",
                .output_has = {"--gpus = 16", "--set cluster.gpus=8"}},
    HostileCase{.name = "run_seed_and_set_simulation_seed",
                .args = small("run --seed 3 --set simulation.seed=4"),
                .output_has = {"--seed = 3", "simulation.seed"}},
    // campaign: the sweep's intervals without the sweep; text-report options with --json.
    HostileCase{.name = "campaign_intervals_without_the_sweep",
                .args = "campaign " + std::string(MEGASIM_SOURCE_DIR) +
                        "/tests/data/campaign_small.toml --days 1 "
                        "--seeds 1 --intervals 600,1200",
                .output_has = {"--intervals = 600,1200", "--sweep-checkpoint-interval"}},
    HostileCase{.name = "campaign_timeline_lines_with_json",
                .args = "campaign " + std::string(MEGASIM_SOURCE_DIR) +
                        "/tests/data/campaign_small.toml --days 1 "
                        "--seeds 1 --json --timeline-lines 5",
                .output_has = {"--timeline-lines = 5", "--json"}},
    // collective: JSON-only and --group-only options.
    HostileCase{.name = "collective_wall_time_without_json",
                .args = "collective --gpus 16 --wall-time",
                .output_has = {"--wall-time", "without --json"}},
    HostileCase{.name = "collective_tp_without_group",
                .args = "collective --gpus 16 --tp 2",
                .output_has = {"--tp = 2", "without --group"}},
    HostileCase{.name = "collective_pp_without_group",
                .args = "collective --gpus 16 --pp 2",
                .output_has = {"--pp = 2", "without --group"}},
    // sweep: nothing to confirm when every plan is simulated in full.
    HostileCase{.name = "sweep_confirm_top_with_full",
                .args = "sweep --set cluster.gpus=8 --set model.num_layers=4 --set plan.global_batch_size=8 --full "
                        "--confirm-top 3",
                .output_has = {"--confirm-top = 3", "with --full"}},
    // sweep: a --set of a swept key, overridden at every point.
    HostileCase{.name = "sweep_set_of_a_swept_key",
                .args = "sweep --set cluster.gpus=8 --set model.num_layers=4 --set plan.global_batch_size=8 --vary "
                        "model.num_layers=2,4",
                .output_has = {"--set = model.num_layers=4", "--vary"}},
    HostileCase{.name = "sweep_set_cluster_gpus_with_gpus",
                .args = "sweep --set cluster.gpus=8 --set model.num_layers=4 --set plan.global_batch_size=8 --gpus 16",
                .output_has = {"--set = cluster.gpus=8", "--gpus"}},
    // validate and calibrate: cuda-only options with --backend cpu.
    HostileCase{.name = "validate_stage_with_the_cpu_backend",
                .args = small("validate --backend cpu --stage 1"),
                .output_has = {"--stage = 1", "--backend cpu"}},
    HostileCase{.name = "validate_timeout_in_shard_mode",
                .args = small("validate --backend cuda --stage 0 --timeout 5"),
                .output_has = {"--timeout = 5", "with --stage"}},
    HostileCase{.name = "calibrate_nccl_max_bytes_with_the_cpu_backend",
                .args = "calibrate --backend cpu --nccl-max-bytes 1MiB",
                .output_has = {"--nccl-max-bytes = 1MiB", "--backend cpu"}},
    HostileCase{.name = "calibrate_gpu_with_the_cpu_backend",
                .args = "calibrate --backend cpu --gpu A100",
                .output_has = {"--gpu = A100", "--backend cpu"}},
});

}  // namespace
