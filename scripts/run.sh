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
./build/cli/megasim collective "$scenario" --group dp --bytes 1GiB "$@"
