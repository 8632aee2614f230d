#!/usr/bin/env bash
# The RPC benchmarks against hybridcached running as a separate process (Unix socket and
# TCP with a token), then the same benchmarks against an in-process node, in one run.
#   bash scripts/bench-rpc.sh [extra Google Benchmark flags]
# Needs a release build (cmake --preset release && cmake --build --preset release).
# HC_BENCH_BIN=DIR: another build directory; HC_BENCH_SEPARATE_ONLY=1: skip the in-process
# part (scripts/bench-rpc-compare.sh uses both); HC_BENCH_NODE_FLAGS="...": extra flags for the
# separate hybridcached (e.g. "--threads 1 --actor-poll-attempts 20000").
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${HC_BENCH_BIN:-build/release}
[ -x "$bin/tools/hcbench/hcbench" ] || { echo "build first: cmake --build --preset release"; exit 1; }
daemon=$bin/actors/daemon/hybridcached
[ -x "$daemon" ] || daemon=$bin/actors/node/hybridcached  # builds before the daemon moved
tmp=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
# shellcheck disable=SC2086  # the extra flags are words
"$daemon" ${HC_BENCH_NODE_FLAGS:-} --socket "$tmp/node.sock" --tcp 127.0.0.1:0 \
  --token-file "$tmp/token" --metrics off --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do
  grep -q "hybridcached ready" "$tmp/log" 2>/dev/null && break
  sleep 0.05
done
tcp=$(grep -o 'serving on tcp [0-9.:]*' "$tmp/log" | awk '{print $4}')
[ -n "$tcp" ] || { cat "$tmp/log"; echo "the node did not start"; exit 1; }
filter='StepRpc|RoundTrip|Pipelined|StepInProcess|SocketPingPong|Iteration|StoreRpc'
# Interleaved repetitions: the VM's wake-up cost drifts; compare figures of one run.
common=(--benchmark_filter="$filter" --benchmark_min_time=0.5 --benchmark_repetitions=3
        --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true "$@")
echo "== separate process: hybridcached ${HC_BENCH_NODE_FLAGS:-} pid $pid (unix:$tmp/node.sock, tcp $tcp)"
HC_BENCH_NODE="unix:$tmp/node.sock" HC_BENCH_NODE_TCP="$tcp" HC_BENCH_TOKEN="$(cat "$tmp/token")" \
  "$bin/tools/hcbench/hcbench" "${common[@]}"
[ "${HC_BENCH_SEPARATE_ONLY:-0}" = 1 ] && exit 0
echo "== in process (client, RPC server and actors in one process)"
"$bin/tools/hcbench/hcbench" "${common[@]}"
