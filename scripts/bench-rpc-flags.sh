#!/usr/bin/env bash
# Two hybridcached of the same build, started with two sets of flags and alive at once, and
# the RPC benchmarks run against each in turn, ROUNDS times (A B A B ...), so that the
# machine's drift hits both sides alike. Prints, per benchmark and side, the mean time per
# call and the p50 of each round, and their medians (BENCHMARKS.md §4.4).
#   bash scripts/bench-rpc-flags.sh "FLAGS_A" "FLAGS_B" [ROUNDS] [FILTER]
# e.g. bash scripts/bench-rpc-flags.sh "--step-spin-us 0" "" 6
# Needs a release build (cmake --preset release && cmake --build --preset release).
# Two builds instead of two sets of flags: HC_BENCH_BIN_A / HC_BENCH_BIN_B name each side's
# build directory (its hybridcached and its hcbench), e.g. a worktree of the base commit:
#   HC_BENCH_BIN_A=/tmp/before/build/release bash scripts/bench-rpc-flags.sh "" "" 8
set -euo pipefail
cd "$(dirname "$0")/.."
flags_a=${1?usage: bench-rpc-flags.sh FLAGS_A FLAGS_B [ROUNDS] [FILTER]}
flags_b=${2?usage: bench-rpc-flags.sh FLAGS_A FLAGS_B [ROUNDS] [FILTER]}
rounds=${3:-6}
filter=${4:-'IterationRpc/reqs:(8|32)/tcp:0/shared:2$|SmallStepRpc/tcp:0$'}
bin=${HC_BENCH_BIN:-build/release}
bin_a=${HC_BENCH_BIN_A:-$bin}
bin_b=${HC_BENCH_BIN_B:-$bin}
for b in "$bin_a" "$bin_b"; do
  [ -x "$b/tools/hcbench/hcbench" ] || { echo "build first: cmake --build --preset release ($b)"; exit 1; }
done
bin_of() { if [ "$1" = a ]; then echo "$bin_a"; else echo "$bin_b"; fi; }
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
  "$(bin_of "$1")/actors/daemon/hybridcached" $2 --socket "$tmp/$1.sock" --metrics off \
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
echo "A: $bin_a/hybridcached $flags_a"
echo "B: $bin_b/hybridcached $flags_b"
for round in $(seq "$rounds"); do
  echo "round $round of $rounds" >&2
  for side in a b; do
    HC_BENCH_NODE="unix:$tmp/$side.sock" "$(bin_of $side)/tools/hcbench/hcbench" \
      --benchmark_filter="$filter" --benchmark_min_time=1 --benchmark_out_format=json \
      --benchmark_out="$tmp/$side-$round.json" >/dev/null 2>&1
  done
done
/usr/bin/python3 - "$tmp" <<'PY'
import collections, json, pathlib, statistics, sys
mean, p50 = collections.defaultdict(list), collections.defaultdict(list)
for f in sorted(pathlib.Path(sys.argv[1]).glob("*-*.json"),
                key=lambda f: int(f.stem.split("-")[1])):
    side = f.stem.split("-")[0]
    for b in json.loads(f.read_text())["benchmarks"]:
        mean[(b["name"], side)].append(b["real_time"])
        if "p50_us" in b:
            p50[(b["name"], side)].append(b["p50_us"])
for key in sorted(mean):
    name, side = key
    print(f"{side.upper()} {name:45s} mean: median {statistics.median(mean[key]):8.1f} us, rounds " +
          " ".join(f"{x:.1f}" for x in mean[key]))
    if p50[key]:
        print(f"{side.upper()} {name:45s} p50:  median {statistics.median(p50[key]):8.1f} us, rounds " +
              " ".join(f"{x:.1f}" for x in p50[key]))
PY
