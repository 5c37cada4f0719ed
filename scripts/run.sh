#!/usr/bin/env bash
# Command 1 of the README: install, build, and run the main job on the default scenario.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
scenario=scenarios/megascale/175b_megatron.toml
echo "== megasim topo $scenario"
./build/cli/megasim topo "$scenario"
echo "== megasim plan $scenario"
./build/cli/megasim plan "$scenario"
echo "== megasim collective $scenario --group dp --bytes 1GiB"
./build/cli/megasim collective "$scenario" --group dp --bytes 1GiB
# One full iteration of the 175B model with MegaScale's optimisations on 12,288 GPUs, rank by rank
# with every PP and DP flow on the Clos (about 2 s here); report.json and a Perfetto trace.json go
# to out/175b_megascale.
echo "== megasim run scenarios/megascale/175b_megascale.toml"
./build/cli/megasim run scenarios/megascale/175b_megascale.toml --out out/175b_megascale "$@"
