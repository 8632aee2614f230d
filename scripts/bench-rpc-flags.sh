#!/usr/bin/env bash
# Two hybridcached of the same build, started with two sets of flags and alive at once, and
# the RPC benchmarks run against each in turn, ROUNDS times (A B A B ...), so that the
# machine's drift hits both sides alike. Prints, per benchmark and side, the mean time per
# call of each round and their median (BENCHMARKS.md §4.4).
#   bash scripts/bench-rpc-flags.sh "FLAGS_A" "FLAGS_B" [ROUNDS] [FILTER]
# e.g. bash scripts/bench-rpc-flags.sh "--step-spin-us 0" "" 6
# Needs a release build (cmake --preset release && cmake --build --preset release).
set -euo pipefail
cd "$(dirname "$0")/.."
flags_a=${1?usage: bench-rpc-flags.sh FLAGS_A FLAGS_B [ROUNDS] [FILTER]}
flags_b=${2?usage: bench-rpc-flags.sh FLAGS_A FLAGS_B [ROUNDS] [FILTER]}
rounds=${3:-6}
filter=${4:-'IterationRpc/reqs:(8|32)/tcp:0/shared:2$|SmallStepRpc/tcp:0$'}
bin=${HC_BENCH_BIN:-build/release}
[ -x "$bin/tools/hcbench/hcbench" ] || { echo "build first: cmake --build --preset release"; exit 1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start() {  # side flags
  # shellcheck disable=SC2086  # the flags are words
  "$bin/actors/daemon/hybridcached" $2 --socket "$tmp/$1.sock" --metrics off \
    --data-dir "$tmp/$1.data" >"$tmp/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do
    grep -q "hybridcached ready" "$tmp/$1.log" 2>/dev/null && return 0
    sleep 0.05
  done
  cat "$tmp/$1.log"
  echo "node $1 did not start"
  exit 1
}
start a "$flags_a"
start b "$flags_b"
echo "A: hybridcached $flags_a"
echo "B: hybridcached $flags_b"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  for side in a b; do
    HC_BENCH_NODE="unix:$tmp/$side.sock" "$bin/tools/hcbench/hcbench" \
      --benchmark_filter="$filter" --benchmark_min_time=1 --benchmark_format=csv 2>/dev/null |
      grep '^"BM' | awk -F, -v s="$side" '{gsub(/"/, "", $1); print s, $1, $3}'
  done
done | /usr/bin/python3 -c '
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in sys.stdin:
    side, name, t = line.split()
    runs[(name, side)].append(float(t))
for (name, side) in sorted(runs):
    v = runs[(name, side)]
    print(f"{side.upper()} {name:45s} median {statistics.median(v):8.1f} us  rounds " +
          " ".join(f"{x:.1f}" for x in v))
'
