#!/usr/bin/env bash
# Issue 6's race demonstration: the same hcsim run (host tier, load-backs) against a node
# with every ordering rule, then against one started with --race-demo loads-after-ops
# (load-backs run after the COW ops of the forward that reads them). The first must be
# clean; the second must report state mismatches and exit non-zero — proof that hcsim's
# check can fail and that the rule is what prevents the corruption.
# Usage: hcsim_race_demo_test.sh HYBRIDCACHED HCSIM
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
daemon=$1 hcsim=$2
tmp=$(mktemp -d)
pid=
cleanup() { if [ -n "$pid" ]; then stop_node "$pid"; fi; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; tail -20 "$tmp/log" || true; exit 1; }

run_against() {  # --race-demo value; prints hcsim's JSON, sets rc
  "$daemon" --socket "$tmp/s" --metrics off --l3 false --data-dir "$tmp/data" \
    --race-demo "$1" >"$tmp/log" 2>&1 &
  pid=$!
  wait_for_node "$pid" "$tmp/log"
  rc=0
  out=$("$hcsim" --socket "$tmp/s" --strategy extra_buffer --ops 12000 --workers 1 --seed 7 \
    --json --progress false --kv-tokens 4096 --slots 32 --max-context 1200 --batch 4 \
    --host-ratio 3) || rc=$?
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
}
run_against off
[ "$rc" = 0 ] || fail "with every rule on hcsim exited $rc: $out"
grep -q '"mismatches":0' <<<"$out" || fail "with every rule on: $out"
grep -Eq '"l2":[1-9]' <<<"$out" || fail "no load-back happened, the demo would prove nothing: $out"
echo "rules on: $out"
run_against loads-after-ops
echo "loads-after-ops: $out"
[ "$rc" = 1 ] || fail "hcsim must exit 1 when it finds mismatches (got $rc)"
grep -Eq '"state_mismatches":[1-9]' <<<"$out" || fail "the broken rule went unnoticed: $out"
grep -q '"errors":0' <<<"$out" || fail "mismatches, not errors, are expected: $out"
echo "hcsim race demonstration: ok"
