#!/usr/bin/env bash
# Crash consistency of the L3 store (like RocksDB's db_crashtest.py: kill, reopen, verify).
# Each run kills hybridcached with SIGKILL at a random moment on one data dir — most while
# hcsim drives it (write-through backups to L3, prefetch), some during start-up, some
# during a clean shutdown — then restarts it on the same data dir and verifies with hcsim
# (--prefetch, same conversations): every prefix that comes back from L3 is compared byte
# for byte with the toy model's recomputation. Every run uses the same conversations, so a
# verification reads what every earlier run (crashed or not) left in L3.
#
# What a crash may lose, by design: the L3 writes since the store's last timed flush (value
# segments synced, then the RocksDB index flushed; no write-ahead log: cache data is
# reconstructible). What it may never do: serve a value that is not exactly what was
# written (every value's XXH3 is in its index record, written after its bytes, and checked
# on the value's first read after a restart), or keep the node from starting again.
#
# Usage: tools/crash_test.sh [RUNS] [BUILD_DIR] [SEED]
#   RUNS       default 100
#   BUILD_DIR  default build/release
#   SEED       default: from the clock (printed; the same seed repeats the kill moments)
#   $HC_CRASH_DAEMON_ARGS: more hybridcached options, split on spaces — e.g.
#   "--l3-background-load-above 0" reads the L3 index while the node serves, as a node with
#   a large store does (its small store is read before serving otherwise)
#   $HC_CRASH_DAMAGE: damages per run (default 0) done to the data dir after the kill, while
#   the node is down, by tools/damage_data_dir.py — bytes flipped or zeroed, files cut,
#   deleted or grown, in the value segments or the RocksDB index: a failing disk or a
#   cleanup script. The same rules hold: every restart serves, no damaged value is served
#   (an index RocksDB finds corrupt, or with files missing, is moved aside and the store
#   starts empty)
# Output: one line per run (and per damage), then the report (runs, values recovered, L3
# hits verified, corrupt values served, corrupt values detected, stores moved aside, failed
# restarts); exit status 1 unless corrupt values served and failed restarts are both 0.
# Also written as JSON to $HC_CRASH_REPORT if set.
set -uo pipefail
runs=${1:-100}
build=${2:-build/release}
seed=${3:-$(date +%s)}
damage=${HC_CRASH_DAMAGE:-0}
daemon=$build/actors/daemon/hybridcached
hcsim=$build/tools/hcsim/hcsim
py=/usr/bin/python3
damager="$(dirname "$0")/damage_data_dir.py"
[[ $runs =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ && $damage =~ ^[0-9]+$ ]] || {
  echo "usage: crash_test.sh [RUNS] [BUILD_DIR] [SEED] (whole numbers; HC_CRASH_DAMAGE too)" >&2
  exit 2
}
[ -x "$daemon" ] && [ -x "$hcsim" ] || { echo "build first: $daemon, $hcsim" >&2; exit 2; }
RANDOM=$seed
tmp=$(mktemp -d)
# Private copies: a rebuild of BUILD_DIR during the run must not swap the binaries.
mkdir -p "$tmp/bin"
cp "$daemon" "$hcsim" "$build/tools/hcctl/hcctl" "$tmp/bin/"
daemon=$tmp/bin/hybridcached
hcsim=$tmp/bin/hcsim
pid=
load=
cleanup() {
  [ -n "$load" ] && kill -9 "$load" 2>/dev/null
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

sim=(--socket "$tmp/s" --strategy extra_buffer --kv-tokens 4096 --slots 32 --max-context 1200
  --batch 4 --host-ratio 3 --prefetch --model crash --json --progress false)

start_node() {  # start_node LOG: starts hybridcached on the data dir; pid in $pid
  rm -f "$tmp/s"
  # shellcheck disable=SC2086  # the extra options are split on purpose
  "$daemon" --socket "$tmp/s" --metrics off --data-dir "$tmp/data" --l3-capacity 256MB \
    ${HC_CRASH_DAEMON_ARGS:-} >"$1" 2>&1 &
  pid=$!
}
ready() {  # ready LOG: 0 once the node logged it is ready (10 s at most)
  for _ in $(seq 200); do
    grep -q "hybridcached ready" "$1" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
ms_sleep() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

echo "crash test: $runs runs, seed $seed, $damage damages a run, data dir $tmp/data" \
  "(binaries copied from $build)"
failed_restarts=0 corrupt_served=0 hits_verified=0 values_recovered=0 detected_corrupt=0
damages=0 moved_aside=0
kills_load=0 kills_start=0 kills_stop=0 verify_errors=0
for run in $(seq "$runs"); do
  # 1. The crash.
  mode=$((RANDOM % 10))
  start_node "$tmp/crash.log"
  if [ "$mode" -eq 0 ]; then  # during start-up: RocksDB opening, the index loading
    what=start
    ms_sleep $((RANDOM % 300))
    kills_start=$((kills_start + 1))
  else
    if ! ready "$tmp/crash.log"; then
      failed_restarts=$((failed_restarts + 1))
      echo "run $run: the node did not start:"; tail -5 "$tmp/crash.log"
      kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
      continue
    fi
    "$hcsim" "${sim[@]}" --ops 200000 --workers 2 --seed 3 >/dev/null 2>&1 &
    load=$!
    ms_sleep $((300 + RANDOM % 7000))
    if [ "$mode" -eq 1 ]; then  # during a clean shutdown: memtables flushing
      what=stop
      kill -TERM "$pid" 2>/dev/null
      ms_sleep $((RANDOM % 150))
      kills_stop=$((kills_stop + 1))
    else
      what=load
      kills_load=$((kills_load + 1))
    fi
  fi
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=
  if [ -n "$load" ]; then kill -9 "$load" 2>/dev/null; wait "$load" 2>/dev/null; load=; fi

  # 1b. Damage to the data dir while the node is down (HC_CRASH_DAMAGE).
  for _ in $(seq "$damage"); do
    echo "run $run: damage: $($py "$damager" "$tmp/data" "$RANDOM")"
    damages=$((damages + 1))
  done

  # 2. Restart on the same data dir and verify what comes back from L3.
  start_node "$tmp/verify.log"
  if ! ready "$tmp/verify.log"; then
    failed_restarts=$((failed_restarts + 1))
    echo "run $run (killed during $what): RESTART FAILED:"; tail -5 "$tmp/verify.log"
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=
    continue
  fi
  out=$("$hcsim" "${sim[@]}" --ops 8000 --workers 2 --seed 3 2>/dev/null)
  # After the verification: an index read while the node serves is logged once it is read.
  values=$(sed -n 's/.*L3 store .* ready: \([0-9]*\) values.*/\1/p' "$tmp/verify.log" | head -1)
  [ -n "${HC_CRASH_DEBUG:-}" ] && echo "$out" >&2
  read -r mism errs l3 < <($py -c '
import json, sys
try:
    r = json.loads(sys.stdin.read())
    print(r["mismatches"], r["errors"], r["hit_tokens"]["l3"])
except Exception:
    print(0, 1, 0)' <<<"$out")
  corrupt=$("$tmp/bin/hcctl" --socket "$tmp/s" inspect --json 2>/dev/null |
    $py -c 'import json,sys; print(json.load(sys.stdin)["host_storage"]["l3"].get("corrupt", 0))' \
      2>/dev/null || echo 0)
  kill -TERM "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=
  grep -q "index was corrupt" "$tmp/verify.log" && moved_aside=$((moved_aside + 1))
  values_recovered=$((values_recovered + ${values:-0}))
  hits_verified=$((hits_verified + l3))
  corrupt_served=$((corrupt_served + mism))
  detected_corrupt=$((detected_corrupt + corrupt))
  if [ "$errs" -ne 0 ]; then  # say what went wrong: hcsim's first error, the node's log
    verify_errors=$((verify_errors + 1))
    echo "run $run: verification errors; hcsim's first error:" \
      "$($py -c 'import json,sys; print(json.loads(sys.stdin.read()).get("first_error", "?"))' \
        <<<"$out" 2>/dev/null || echo "(no JSON report: ${out:0:200})")"
    echo "--- node log (tail):"; tail -8 "$tmp/verify.log"
  fi
  echo "run $run: killed during $what; restart ok, $values L3 values, $l3 L3 hit tokens verified," \
    "$mism mismatches, $errs errors, $corrupt corrupt values deleted"
done

report=$(
  cat <<EOF
{"runs":$runs,"seed":$seed,"killed_during":{"load":$kills_load,"startup":$kills_start,"shutdown":$kills_stop},
 "values_recovered":$values_recovered,"l3_hit_tokens_verified":$hits_verified,
 "corrupt_values_served":$corrupt_served,"corrupt_values_detected":$detected_corrupt,
 "damages":$damages,"stores_moved_aside":$moved_aside,
 "failed_restarts":$failed_restarts,"verify_runs_with_errors":$verify_errors}
EOF
)
echo "$report"
[ -n "${HC_CRASH_REPORT:-}" ] && echo "$report" >"$HC_CRASH_REPORT"
[ "$corrupt_served" -eq 0 ] && [ "$failed_restarts" -eq 0 ] && [ "$verify_errors" -eq 0 ]
