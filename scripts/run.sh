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
# One full iteration rank by rank at MegaScale's 256-GPU size (the 12,288-GPU iteration currently
# takes about 16 s to simulate; see bench/README.md).
echo "== megasim run scenarios/megascale/175b_megascale.toml at 256 GPUs"
./build/cli/megasim run scenarios/megascale/175b_megascale.toml --set cluster.gpus=256 \
  --set plan.global_batch_size=768 --out out/175b_megascale_256 "$@"
