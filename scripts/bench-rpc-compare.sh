#!/usr/bin/env bash
# The RPC figures of two builds side by side, from one run: each build's hybridcached as a
# separate process with that build's hcbench (bench-rpc.sh's benchmarks), the two builds
# alternating A B A B so that a drift of the machine hits both. Prints one markdown table
# of p50 per call (median over all repetitions) and the ratios to the raw round trip.
#   bash scripts/bench-rpc-compare.sh BEFORE_BUILD_DIR [AFTER_BUILD_DIR]
# A build directory is a release build of any commit, e.g.
#   git worktree add /tmp/before 8be745e && (cd /tmp/before && cmake --preset release &&
#     cmake --build --preset release --target hcbench hybridcached)
#   bash scripts/bench-rpc-compare.sh /tmp/before/build/release
set -euo pipefail
cd "$(dirname "$0")/.."
before=${1:?usage: bench-rpc-compare.sh BEFORE_BUILD_DIR [AFTER_BUILD_DIR]}
after=${2:-build/release}
rounds=${HC_BENCH_ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for round in $(seq "$rounds"); do
  for side in before after; do
    dir=$before
    [ "$side" = after ] && dir=$after
    echo "== round $round: $side ($dir)" >&2
    HC_BENCH_BIN=$dir HC_BENCH_SEPARATE_ONLY=1 bash scripts/bench-rpc.sh \
      --benchmark_filter='SocketPingPong|BM_RawRoundTrip|BM_SmallStepRpc|BM_StepRpc' \
      --benchmark_out="$out/$side-$round.json" --benchmark_out_format=json >&2
  done
done
/usr/bin/python3 - "$out" <<'PY'
import json, pathlib, statistics, sys
runs = {"before": {}, "after": {}}
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    side = f.name.split("-")[0]
    for b in json.loads(f.read_text())["benchmarks"]:
        if b.get("aggregate_name") not in (None, "median") or "p50_us" not in b:
            continue
        name = b["run_name"] if "run_name" in b else b["name"]
        runs[side].setdefault(name, []).append(b["p50_us"])
rows = [("socket floor (64 B ping-pong, UDS)", "BM_SocketPingPong"),
        ("raw round trip (`ping`), UDS", "BM_RawRoundTrip/tcp:0"),
        ("small call through the actors, UDS", "BM_SmallStepRpc/tcp:0"),
        ("step of 8 requests (2 RPCs), UDS", "BM_StepRpc/reqs:8/tcp:0"),
        ("step of 32 requests (2 RPCs), UDS", "BM_StepRpc/reqs:32/tcp:0"),
        ("raw round trip (`ping`), TCP", "BM_RawRoundTrip/tcp:1"),
        ("small call through the actors, TCP", "BM_SmallStepRpc/tcp:1"),
        ("step of 8 requests (2 RPCs), TCP", "BM_StepRpc/reqs:8/tcp:1"),
        ("step of 32 requests (2 RPCs), TCP", "BM_StepRpc/reqs:32/tcp:1")]
med = {s: {k: statistics.median(v) for k, v in runs[s].items()} for s in runs}
def raw(side, name):
    return med[side].get("BM_RawRoundTrip/tcp:1" if "tcp:1" in name else "BM_RawRoundTrip/tcp:0")
print("| benchmark | before p50 | after p50 | after ÷ before | before ÷ raw | after ÷ raw |")
print("|---|---|---|---|---|---|")
for label, key in rows:
    b, a = med["before"].get(key), med["after"].get(key)
    if b is None or a is None:
        continue
    rb, ra = raw("before", key), raw("after", key)
    print(f"| {label} | {b:.1f} µs | {a:.1f} µs | {a / b:.2f} | {b / rb:.2f} | {a / ra:.2f} |")
PY
