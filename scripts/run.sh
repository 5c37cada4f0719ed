#!/usr/bin/env bash
# Command 1 of the README: install what the megasim executable needs, build it, and run the main job
# on the default scenario (2-5 minutes from a fresh clone on a 2-core machine, most of it the build:
# 86 s on 2026-12-02's, with the Debian packages already there; a second run takes seconds).
#   MEGASIM_BUILD=optimized bash scripts/run.sh   link-time and profile-guided optimisation (build-opt/,
#                                                 about 3 minutes more; 6-12% faster simulations)
#   MEGASIM_WITH_CUDA=AUTO bash scripts/run.sh    also build the CUDA/NCCL backend (nvcc and NCCL)
# Extra arguments go to the final `megasim run`.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${MEGASIM_BUILD:-main}
case "$build" in
  main) megasim=build/cli/megasim ;;
  optimized) megasim=build-opt/cli/megasim ;;
  *) echo "scripts/run.sh: MEGASIM_BUILD=$build: expected main or optimized" >&2; exit 2 ;;
esac

started=$SECONDS
phase() { printf '\n== [%d s] %s\n' "$((SECONDS - started))" "$*"; }

phase "1/3 installing the Debian packages the executable needs (scripts/install_deps.sh main)"
bash scripts/install_deps.sh main
phase "2/3 building the megasim executable (scripts/build.sh $build)"
bash scripts/build.sh "$build"
phase "3/3 the main job: MegaScale's 175B model on 12,288 GPUs"
scenario=scenarios/megascale/175b_megatron.toml
echo "-- megasim topo $scenario"
"$megasim" topo "$scenario"
echo "-- megasim plan $scenario"
"$megasim" plan "$scenario"
echo "-- megasim collective $scenario --group dp --bytes 1GiB"
"$megasim" collective "$scenario" --group dp --bytes 1GiB
# One full iteration of the 175B model with MegaScale's optimisations on 12,288 GPUs of a production
# cluster, rank by rank with every PP and DP flow on the Clos, and its straggler what-ifs (10-30 s;
# --set stragglers.enabled=false for the ideal cluster, one simulation); report.json and a Perfetto
# trace.json go to out/175b_megascale.
echo "-- megasim run scenarios/megascale/175b_megascale.toml --out out/175b_megascale"
"$megasim" run scenarios/megascale/175b_megascale.toml --out out/175b_megascale "$@"
phase "done: out/175b_megascale/report.json and trace.json (open it in https://ui.perfetto.dev)"
