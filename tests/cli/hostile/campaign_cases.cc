// Campaigns on damaged fabrics: failure rates at which failed switches or cables partition the
// fabric. Each run ended in "internal error: the workload deadlocked" (exit 134, SIGABRT); the
// campaign now fails the job, evicts the hosts cut off, recovers and completes (exit code 0).
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";

HostileCase completes(std::string name, std::string args, std::vector<std::string> output_has) {
  return HostileCase{.name = std::move(name),
                     .args = "campaign " + kSmall + " " + args,
                     .output_has = std::move(output_has),
                     .exit_code = 0,
                     .timeout_s = 300};
}

const bool registered = megasim::hostile::register_cases({
    completes("switch_mtbf_5000", "--days 30 --set failures.switch_mtbf_h=5000 --timeline-lines 100000",
              {"partitioned", "hosts cut off"}),
    completes("switch_mtbf_2000_one_seed",
              "--days 30 --seeds 1 --set failures.switch_mtbf_h=2000 --timeline-lines 100000",
              {"  partitioned          switch.agg"}),
    completes("switch_mtbf_5000_json", "--days 30 --json --set failures.switch_mtbf_h=5000",
              {"\"disconnected_hosts\": 16"}),
    // No fabric timeout: the job hangs until PyTorch's NCCL watchdog (recovery.nccl_watchdog_s).
    completes("switch_mtbf_5000_no_stall_timeout",
              "--days 30 --set failures.switch_mtbf_h=5000 --set fabric.stall_timeout_s=0 --timeline-lines 100000",
              {"partitioned"}),
});

}  // namespace
