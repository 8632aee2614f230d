#!/usr/bin/env bash
# hcsim in CUDA mode (issue 18): a real hybridcached whose instances keep their L1 pools in
# GPU memory, hcsim workers that map them through CUDA IPC and run the toy model's forwards
# as kernels on their own streams, ordered against the node's clears and copies by the
# session's fence events only — and every prefix hit checked byte for byte: 0 mismatches,
# 0 leaks, 0 errors. Every strategy with overlap scheduling (no_buffer runs without it, as
# SGLang does), a host tier, Mamba2 at page 64, prefetch from L3.
# Exits 77 (ctest: skipped), saying why, where no CUDA device is usable.
# Usage: hcsim_cuda_test.sh HYBRIDCACHED HCSIM [OPS]
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
daemon=$1 hcsim=$2 ops=${3:-12000}
tmp=$(mktemp -d)
pid=
cleanup() { if [ -n "$pid" ]; then stop_node "$pid"; fi; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- node log:"; tail -20 "$tmp/log" || true; exit 1; }

"$daemon" --socket "$tmp/s" --metrics off --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"

run() {  # name, workers, hcsim args...
  local name=$1 workers=$2
  shift 2
  local out rc=0
  out=$("$hcsim" --socket "$tmp/s" --ops "$ops" --workers "$workers" --seed 11 --json \
    --progress false --device cuda --model "cuda-$name" "$@" 2>"$tmp/err") || rc=$?
  if [ "$rc" = 3 ]; then
    echo "SKIP: $(cat "$tmp/err")"
    exit 77
  fi
  [ "$rc" = 0 ] || fail "$name: hcsim exited $rc: $out $(cat "$tmp/err")"
  for field in '"mismatches":0' '"leaks":0' '"errors":0'; do
    grep -q "$field" <<<"$out" || fail "$name: want $field in $out"
  done
  grep -Eq '"reused_tokens":[1-9]' <<<"$out" || fail "$name: no prefix was ever reused: $out"
  echo "$name: $out"
  out_last=$out
}
small=(--kv-tokens 4096 --slots 32 --max-context 1200 --batch 4)
run no_buffer 2 --strategy no_buffer "${small[@]}" --host-ratio 3
for st in extra_buffer extra_buffer_lazy; do
  run "$st-overlap" 3 --strategy "$st" "${small[@]}" --host-ratio 3 --overlap-scheduling
done
run mamba2-p64-overlap 2 --strategy extra_buffer --mamba2 --chunk 128 --page-size 64 \
  --kv-tokens 8192 --slots 32 --max-context 2000 --track-interval 128 --overlap-scheduling
run prefetch-overlap 2 --strategy extra_buffer "${small[@]}" --host-ratio 3 --prefetch \
  --overlap-scheduling
grep -Eq '"l2":[1-9]' <<<"$out_last" || fail "the host tier never served a hit"
echo "hcsim CUDA scenarios: ok"
