#!/usr/bin/env bash
# Random hcsim configurations against one long-lived hybridcached with its RocksDB L3: each
# run draws a strategy, page size, model chunk, kernel family (FLA or Mamba2), track
# interval, ping-pong track slots or not, pool sizes, batch, workers, context length, the
# workload's shape (conversations, system prompts and their length, turn and output
# lengths, prefill chunk, abort rate) and, each on its own, overlap scheduling, pins
# (--pin-rate), demotes (--demote-rate) and a host tier (none, or 1.5x / 3x of L1, with or without storage
# prefetch) — and its own model id, so every run opens an instance of its own beside the
# earlier ones'. A run must either pass
# (exit 0: 0 mismatches, 0 leaks, 0 errors) or be refused as a usage error before any
# worker connects (exit 2: settings the node or SGLang would refuse, e.g. Mamba2 with a
# track interval below its chunk); anything else is a failure, printed with its settings.
# The draws come from SEED, so a failing run is repeated by the same SEED and run number.
#
# Usage: tools/hcsim/random_configs.sh [SECONDS] [SEED] [BUILD_DIR]
#   SECONDS    how long to draw runs, default 300
#   SEED       default 1
#   BUILD_DIR  default build/release
# Prints a progress line every 100 runs (stderr) and a summary; exit 1 on any failure,
# 2 if it cannot start.
set -uo pipefail
seconds=${1:-300}
seed=${2:-1}
build=${3:-build/release}
[[ $seconds =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] || {
  echo "usage: random_configs.sh [SECONDS] [SEED] [BUILD_DIR] (whole numbers)" >&2
  exit 2
}
# shellcheck source=tools/support/start_node.sh
. "$(dirname "$0")/../support/start_node.sh"
start_build_node "$build" || exit 2

RANDOM=$seed
pick() { local a=("$@"); echo "${a[RANDOM % ${#a[@]}]}"; }
tiers=("" "" "--host-ratio 3" "--host-ratio 3 --prefetch" "--host-ratio 1.5 --prefetch"
       "--host-ratio 3 --host-ssm-slots 80" "--host-ratio 2 --prefetch --host-ssm-slots 400")
runs=0 passed=0 refused=0 failed=0
end=$((SECONDS + seconds))
while [ $SECONDS -lt "$end" ]; do
  runs=$((runs + 1))
  args=(--strategy "$(pick no_buffer extra_buffer extra_buffer_lazy)"
        --page-size "$(pick 1 1 2 4 16 64)" --chunk "$(pick 64 128 256)"
        --track-interval "$(pick 32 64 128 256 512)" --ops $((RANDOM % 3000 + 500))
        --workers $((RANDOM % 3 + 1)) --seed "$RANDOM" --batch $((RANDOM % 8 + 1))
        --kv-tokens "$(pick 4096 8192 16384)" --slots "$(pick 24 32 64)"
        --max-context "$(pick 1200 2000 3000)" --overlap "$(pick 1 1 1 0)"
        --conversations "$(pick 4 16 64)" --system-prompts "$(pick 1 2 8)"
        --system-prompt-len "$(pick 64 300 1000)" --turn-len "$(pick 40 120 400)"
        --output-len "$(pick 10 40 100)" --chunked-prefill "$(pick 64 256 1024)"
        --abort-rate "$(pick 0 0.03 0.1)" --model "random-$seed-$runs")
  extra=()
  [ $((RANDOM % 3)) = 0 ] && extra+=(--mamba2)
  [ $((RANDOM % 3)) = 0 ] && extra+=(--overlap-scheduling)
  [ $((RANDOM % 3)) = 0 ] && extra+=(--pin-rate "$(pick 0.1 0.5)")
  [ $((RANDOM % 3)) = 0 ] && extra+=(--demote-rate "$(pick 0.2 0.7)")
  # shellcheck disable=SC2206  # a tier is a list of words
  extra+=($(pick "${tiers[@]}"))
  rc=0
  out=$("$hcsim" --socket "$tmp/s" "${args[@]}" "${extra[@]}" --json --progress false \
    2>"$tmp/err") || rc=$?
  case $rc in
    0) passed=$((passed + 1)) ;;
    2) refused=$((refused + 1)) ;;
    *)
      failed=$((failed + 1))
      echo "FAIL run $runs (exit $rc): hcsim ${args[*]} ${extra[*]}"
      echo "  $out $(head -c 400 "$tmp/err")"
      ;;
  esac
  [ $((runs % 100)) = 0 ] &&
    echo "random_configs: $runs runs, $passed passed, $refused refused, $failed failed" >&2
  kill -0 "$node_pid" 2>/dev/null || { echo "FAIL: hybridcached exited:"; tail -20 "$tmp/log"; exit 1; }
done
echo "random_configs: seed $seed, $runs runs: $passed passed, $refused refused, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
