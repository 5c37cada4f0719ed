// Hostile lists (sim/repeats.h): an item named twice in a list the user writes. Each was accepted
// before: a straggler's factors compounded (3:1.2,3:1.1 made server 3 1.32x slower), sweep values and
// --intervals were swept once each without a word, --trace-ranks 1,1 wrote rank 1 once.
#include <string>

#include "hostile_case.h"

namespace {

using megasim::hostile::HostileCase;

const std::string kSmall = std::string(MEGASIM_SOURCE_DIR) + "/tests/data/campaign_small.toml";

const bool registered = megasim::hostile::register_cases({
    HostileCase{.name = "slow_hosts_listed_twice",
                .args = "run " + kSmall + " --set stragglers.slow_hosts=3:1.2,3:1.1",
                .output_has = {"stragglers.slow_hosts", "3:1.2,3:1.1", "listed twice"}},
    HostileCase{.name = "slow_gpus_listed_twice",
                .args = "run " + kSmall + " --set stragglers.slow_gpus=0:1.5,7:1.1,0:1.5",
                .output_has = {"stragglers.slow_gpus", "0 is listed twice"}},
    HostileCase{.name = "slow_nics_listed_twice",
                .args = "run " + kSmall + " --set stragglers.slow_nics=5:2,5:2",
                .output_has = {"stragglers.slow_nics", "listed twice"}},
    HostileCase{.name = "slow_links_listed_twice",
                .args = "run " + kSmall + " --set stragglers.slow_links=12:4,12:2",
                .output_has = {"stragglers.slow_links", "12 is listed twice"}},
    HostileCase{.name = "slow_hosts_listed_twice_in_toml",
                .args = "plan {S}",
                .toml = "[stragglers]\nslow_hosts = \"1:1.5,2:1.1,1:1.5\"\n",
                .output_has = {"stragglers.slow_hosts", "1 is listed twice"}},
    HostileCase{.name = "sweep_vary_value_twice",
                .args = "sweep " + kSmall + " --vary fabric.routing=ecmp,spray,ecmp",
                .output_has = {"fabric.routing", "ecmp is listed twice"}},
    HostileCase{.name = "sweep_vary_value_twice_as_parsed",
                .args = "sweep " + kSmall + " --vary model.seq_length=1024,01024",
                .output_has = {"model.seq_length", "01024 is listed twice"}},
    HostileCase{.name = "sweep_gpus_twice",
                .args = "sweep " + kSmall + " --gpus 64 64",
                .output_has = {"cluster.gpus", "listed twice"}},
    HostileCase{
        .name = "campaign_intervals_twice",
        .args = "campaign " + kSmall + " --days 1 --seeds 1 --sweep-checkpoint-interval --intervals 600,900,600",
        .output_has = {"--intervals", "600", "listed twice"}},
    HostileCase{.name = "trace_ranks_twice",
                .args = "run " + kSmall + " --out out --trace-ranks 1,2,1",
                .output_has = {"trace.ranks", "listed twice"}},
    HostileCase{.name = "trace_ranks_empty_item",
                .args = "run " + kSmall + " --out out --trace-ranks 1,,2",
                .output_has = {"--trace-ranks"}},
});

}  // namespace
