#!/usr/bin/env bash
# The short hcsim scenarios of CI: a real hybridcached, small pools (eviction, demotion,
# load-back, prefetch truncation), every strategy — and every prefix hit checked against
# the toy model: 0 mismatches, 0 leaks, 0 errors. Two worker processes share each
# instance (cross-session id reuse: load-backs, quarantined releases, COW from another
# session's donations). Usage: hcsim_short_test.sh HYBRIDCACHED HCSIM [OPS]
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
daemon=$1 hcsim=$2 ops=${3:-12000}
tmp=$(mktemp -d)
pid=
cleanup() { if [ -n "$pid" ]; then stop_node "$pid"; fi; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- node log:"; tail -20 "$tmp/log" || true; exit 1; }

# --version: the release and the protocol, as the node says them.
[ "$("$hcsim" --version | sed 's/^hcsim //')" = "$("$daemon" --version | sed 's/^hybridcached //')" ] ||
  fail "hcsim --version '$("$hcsim" --version)' is not the node's '$("$daemon" --version)'"

# Settings the node would refuse are a usage error (exit 2, the rule named, and the SGLang
# flags it names as hcsim's), before any worker connects: no node is running yet.
for bad in "--strategy no_buffer --page-size 64:pageSize 1" \
  "--strategy extra_buffer_lazy --overlap 0:requires overlap" \
  "--strategy extra_buffer_lazy --overlap 0:--disable-overlap-schedule is hcsim's --overlap 0" \
  "--strategy extra_buffer --page-size 64 --track-interval 96:--mamba-track-interval is hcsim's --track-interval" \
  "--strategy extra_buffer --mamba2 --chunk 128 --track-interval 64:Mamba2 backend requires --mamba-track-interval (64) >= mamba_chunk_size (128)" \
  "--strategy extra_buffer --mamba2 --chunk 256 --track-interval 128:mamba_chunk_size is hcsim's --chunk" \
  "--host-ssm-slots 80:hicacheSsmBytes is hcsim's --host-ssm-slots" \
  "--host-ratio 3 --host-ssm-slots 20:hicacheSsmBytes (1760) gives 21 host SSM slots" \
  "--host-ratio 3 --host-ssm-slots 20:larger than the device's 48 slots" \
  "--demote-tools:--demote-tools needs --tool-rate"; do
  rc=0
  # shellcheck disable=SC2086  # the settings are words
  "$hcsim" --socket "$tmp/none" ${bad%%:*} --progress false 2>"$tmp/err" >/dev/null || rc=$?
  [ "$rc" = 2 ] && grep -qF -e "${bad#*:}" "$tmp/err" ||
    fail "hcsim ${bad%%:*}: exit $rc, $(cat "$tmp/err")"
done

"$daemon" --socket "$tmp/s" --metrics off --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"

run() {  # name (the model id is ci-<name> without -after-restart), workers, hcsim args...
  local name=$1 model=ci-${1%-after-restart} workers=$2
  shift 2
  local out
  out=$("$hcsim" --socket "$tmp/s" --ops "$ops" --workers "$workers" --seed 7 --json \
    --progress false --model "$model" "$@") || fail "$name: hcsim exited non-zero: $out"
  for field in '"mismatches":0' '"leaks":0' '"errors":0'; do
    grep -q "$field" <<<"$out" || fail "$name: want $field in $out"
  done
  grep -Eq '"ops":[1-9]' <<<"$out" || fail "$name: no ops: $out"
  grep -Eq '"reused_tokens":[1-9]' <<<"$out" || fail "$name: no prefix was ever reused: $out"
  grep -Eq '"retracted":[1-9]' <<<"$out" && retractions=$((retractions + 1))
  echo "$name: $out"
  out_last=$out
}
retractions=0
small=(--kv-tokens 4096 --slots 32 --max-context 1200 --batch 4)
for st in no_buffer extra_buffer extra_buffer_lazy; do
  run "$st" 2 --strategy "$st" "${small[@]}"
  run "$st-hicache" 2 --strategy "$st" "${small[@]}" --host-ratio 3
done
run "mamba2-p64" 2 --strategy extra_buffer --mamba2 --chunk 128 --page-size 64 --kv-tokens 8192 \
  --slots 32 --max-context 2000 --track-interval 128
# Overlap scheduling with three workers: chunks cached while their forward runs are read
# by the other sessions only after it ended (write_fences.hpp).
for st in extra_buffer extra_buffer_lazy; do
  run "$st-overlap" 3 --strategy "$st" "${small[@]}" --host-ratio 3 --overlap-scheduling
done
# Decode out of KV: one worker (a deterministic order of steps) whose batch outgrows a small
# pool retracts decoding requests (SGLang's retract_decode) and re-admits them.
for st in no_buffer extra_buffer; do
  run "$st-retract" 1 --strategy "$st" --kv-tokens 2048 --slots 32 --max-context 1200 --batch 4 \
    --output-len 100
  grep -Eq '"retracted":[1-9]' <<<"$out_last" || fail "$st-retract: no request was retracted"
done
# Pins (Command.pin) among three workers that evict, demote and load back: every pinned
# prefix is still matched, whole, just before its unpin.
run "pins" 3 --strategy extra_buffer "${small[@]}" --host-ratio 3 --overlap-scheduling --pin-rate 0.5
grep -Eq '"pins":[1-9]' <<<"$out_last" || fail "pins: no pin was made"
grep -q '"pin_losses":0' <<<"$out_last" || fail "pins: a pinned prefix was lost"
# Demotes (Command.demote) of finished conversations among three workers with pins: each
# leaves the device for the host tier (at once, or once its backup is done) and its next
# turn loads it back, every byte checked by the toy model.
run "demote" 3 --strategy no_buffer "${small[@]}" --host-ratio 3 --pin-rate 0.3 --demote-rate 0.5 \
  --tool-rate 0.5 --tool-steps 20 --demote-tools
grep -Eq '"demoted_tokens":[1-9]' <<<"$out_last" || fail "demote: nothing was demoted"
grep -q '"pin_losses":0' <<<"$out_last" || fail "demote: a pinned prefix was lost"
grep -q '"demote_evicted_tokens":0' <<<"$out_last" || fail "demote: evicted with a host tier"
# A host SSM pool sized on its own (InstanceSpec.hicacheSsmBytes), barely above the
# device's: its checkpoints are evicted while the host KV pool still has room.
run "host-ssm" 2 --strategy extra_buffer "${small[@]}" --host-ratio 3 --host-ssm-slots 40
run "prefetch" 2 --strategy extra_buffer "${small[@]}" --host-ratio 3 --prefetch
grep -Eq '"l2":[1-9]' <<<"$out_last" || fail "the host tier never served a hit"
# Warm restart: the same conversations against a restarted node come back from L3.
kill -TERM "$pid"
wait "$pid" || fail "SIGTERM exit status $?"
mv "$tmp/log" "$tmp/log.1"
"$daemon" --socket "$tmp/s" --metrics off --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
run "prefetch-after-restart" 2 --strategy extra_buffer "${small[@]}" --host-ratio 3 --prefetch
grep -Eq '"l3":[1-9]' <<<"$out_last" || fail "no prefix came back from L3 after the restart"
echo "hcsim short scenarios: ok ($retractions scenarios retracted requests)"
