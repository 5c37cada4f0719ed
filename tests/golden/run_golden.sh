#!/usr/bin/env bash
# Golden scenario tests (STYLE.md §9): for each folder here, runs `megasim <args> NAME/scenario.toml`
# from this folder (`megasim <args>` alone when the folder has no scenario.toml: keys, and whatif,
# whose args name the trace it reads: whatif_8/trace.json, recorded by `megasim run
# whatif_8/recorded_from.toml --out DIR`) and compares its stdout byte for byte with expected.json.
# One folder per command: topo, collective, plan, run, sweep, campaign, whatif, keys; whatif_bin_8
# reads the trace.bin of whatif_8's recording, and its `same_as` file makes this script check that
# both cases expect the same bytes. Outputs are deterministic
# (same seed, same inputs), so any difference is a behaviour change: review it, then regenerate with
#   MEGASIM_REGENERATE=1 bash tests/golden/run_golden.sh build/cli/megasim
# The one field that depends on the binary and not on the inputs, the git commit of report.json's
# provenance, is masked; the scenario file's path is relative to this folder, so it is the same in
# every checkout.
set -euo pipefail
binary="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
failed=0
for dir in "$here"/*/; do
  name="$(basename "$dir")"
  read -r -a args < "$dir/args"
  [ -f "$dir/scenario.toml" ] && args+=("$name/scenario.toml")
  actual="$("$binary" "${args[@]}" | sed -E 's/("megasim_commit": )"[^"]*"/\1"(masked)"/')"
  if [ "${MEGASIM_REGENERATE:-0}" = "1" ]; then
    printf '%s\n' "$actual" > "$dir/expected.json"
    echo "regenerated $name"
  elif ! diff -u "$dir/expected.json" <(printf '%s\n' "$actual") > /tmp/megasim_golden_diff.txt; then
    echo "FAILED $name:"; head -40 /tmp/megasim_golden_diff.txt; failed=1
  else
    echo "ok $name"
  fi
  # A case whose `same_as` names another must print exactly what that one prints (whatif_bin_8:
  # trace.bin and trace.json of one recording).
  if [ -f "$dir/same_as" ]; then
    read -r twin < "$dir/same_as"
    if ! cmp -s "$dir/expected.json" "$here/$twin/expected.json"; then
      echo "FAILED $name: expected.json differs from $twin/expected.json"; failed=1
    fi
  fi
done
exit "$failed"
