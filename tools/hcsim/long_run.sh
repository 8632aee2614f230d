#!/usr/bin/env bash
# The long hcsim run of issue 6 (BENCHMARKS.md §6): a fresh hybridcached with its RocksDB
# L3, then every strategy in turn with 4 worker processes on one instance, a host tier
# (L2, write-through backups to L3) and a storage prefetch before each admission, on pools
# small enough that eviction, demotion, load-back and prefetch truncation happen all the
# time. Then both extra_buffer strategies again with overlap scheduling (each forward on
# its own thread while the next batch is scheduled). Prints one JSON summary per leg;
# exits 1 if any reports a mismatch, a leak or an error.
#
# Usage: tools/hcsim/long_run.sh [OPS_PER_STRATEGY] [BUILD_DIR] [LEGS]
#   OPS_PER_STRATEGY  default 3400000 (3 strategies: 10.2 M operations; with the two
#                     overlap legs 17 M)
#   BUILD_DIR         default build/release
#   LEGS              the legs to run, space separated, default all five in this order:
#                     "no_buffer extra_buffer extra_buffer_lazy extra_buffer:overlap
#                     extra_buffer_lazy:overlap" (resume an interrupted run with the rest;
#                     each leg is a fresh set of requests, the node is fresh for the run)
set -euo pipefail
ops=${1:-3400000}
build=${2:-build/release}
all_legs="no_buffer extra_buffer extra_buffer_lazy extra_buffer:overlap extra_buffer_lazy:overlap"
legs=${3:-$all_legs}
for leg in $legs; do
  case " $all_legs " in *" $leg "*) ;; *) echo "unknown leg: $leg (legs: $all_legs)" >&2; exit 2 ;; esac
done
# shellcheck source=tools/support/start_node.sh
. "$(dirname "$0")/../support/start_node.sh"
start_build_node "$build" || exit 2
status=0
for leg in $legs; do
  st=${leg%:overlap}
  extra=()
  [ "$leg" != "$st" ] && extra=(--overlap-scheduling)
  echo "== $leg: $ops operations, 4 workers, L2 + L3, prefetch ${extra[*]}" >&2
  start=$(date +%s)
  if ! out=$("$hcsim" --socket "$tmp/s" --strategy "$st" --ops "$ops" --workers 4 --seed 2026 \
      --json --model "long-${leg/:/-}" --kv-tokens 16384 --slots 64 --max-context 1500 \
      --batch 4 --host-ratio 3 --prefetch "${extra[@]}"); then
    status=1
  fi
  echo "{\"leg\":\"$leg\",\"wall_seconds\":$(($(date +%s) - start)),\"report\":$out}"
done
exit $status
