#!/usr/bin/env bash
# The optimised executable (scripts/build.sh optimized: LTO + PGO, build-opt/) must give the same
# reports to the byte as the test build (build/, plain -O3), on the golden scenarios and on the main
# job's 12,288-GPU iteration, sweep and campaign. Run by scripts/test.sh with MEGASIM_CHECK_OPTIMIZED=1,
# or alone after `scripts/build.sh all`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh optimized
tested=build/cli/megasim
optimized=build-opt/cli/megasim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cases=()
for dir in tests/golden/*/; do
  read -r -a args < "$dir/args"
  cases+=("${args[*]} $dir/scenario.toml")
done
cases+=("run scenarios/megascale/175b_megascale.toml --json"
        "run scenarios/megascale/175b_megatron.toml --json"
        "sweep scenarios/megascale/175b_megascale.toml --gpus 1024 --json"
        "campaign tests/data/campaign_small.toml --days 4 --seeds 3 --json")
failed=0
for c in "${cases[@]}"; do
  # shellcheck disable=SC2086
  "$tested" $c > "$work/tested.out"
  # shellcheck disable=SC2086
  "$optimized" $c > "$work/optimized.out"
  if cmp -s "$work/tested.out" "$work/optimized.out"; then
    echo "same: megasim $c"
  else
    echo "DIFFERENT: megasim $c"; diff "$work/tested.out" "$work/optimized.out" | head -20; failed=1
  fi
done
exit "$failed"
