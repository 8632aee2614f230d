#!/usr/bin/env bash
# Sustained load on one hybridcached: 64 sessions (8 hcsim processes of 8 workers, each
# process its own model, so 8 cache instances), strategies mixed (no_buffer, extra_buffer,
# extra_buffer_lazy, the extra_buffer ones also with overlap scheduling), every instance
# with a host tier, write-through backups to the RocksDB L3 and a storage prefetch before
# each admission, for a fixed number of operations. Every prefix hit is verified byte for
# byte by hcsim; the node's RSS is sampled every second.
#
# Usage: tools/soak.sh [OPS] [BUILD_DIR] [L3_CAPACITY]
#   OPS          operations over all sessions (default 2000000)
#   BUILD_DIR    default build/release
#   L3_CAPACITY  the node's --l3-capacity (default 8MB). The L3 store keeps an in-memory
#                index entry per value (its key's bytes + 144, ~230 B for the node's page
#                keys: storage/l3_index.hpp) and hcsim's toy pages are 32 B, so the node's
#                RSS grows with the L3 until it is full; 8MB fills in the first minute and
#                the run measures the steady state (LRU eviction); a larger one measures the
#                growth of the index (BENCHMARKS.md §8).
# Output: progress lines, then one JSON report: sessions, instances, ops, seconds, ops/s,
# step latency p50/p99/p999/max (µs, merged over every session), RSS at warm-up (after
# 20 % of the run), at the end and its growth, leaks, mismatches, errors. Exit status 1
# on any leak, mismatch or error. The RSS samples go to $HC_SOAK_RSS (CSV: seconds, RSS
# and its anonymous, file and shared-memory parts, KiB) if set; HC_SOAK_KEEP=DIR keeps the
# run's node log (RocksDB's warnings included), hcsim outputs and RSS samples there.
set -uo pipefail
ops=${1:-2000000}
build=${2:-build/release}
l3_capacity=${3:-8MB}
py=/usr/bin/python3
procs=8
workers=8
. "$(dirname "$0")/support/start_node.sh"
start_build_node "$build" --l3-capacity "$l3_capacity" || exit 2
pid=$node_pid
cleanup() {  # every job: the node, the sampler and, on an early exit, the hcsim processes
  jobs -p | xargs -r kill 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# RSS of the node, one sample per second: seconds,rss_kib,anon_kib,file_kib,shmem_kib (the
# RSS and its three parts as /proc/PID/status splits it: the heap and other private memory;
# mapped files; shared memory — the instances' pools, counted as the node touches them).
(
  t=0
  while kill -0 "$pid" 2>/dev/null; do
    row=$(awk '/^VmRSS/ {r = $2} /^RssAnon/ {a = $2} /^RssFile/ {f = $2} /^RssShmem/ {s = $2}
               END { if (r != "") print r "," a "," f "," s }' "/proc/$pid/status" 2>/dev/null)
    [ -n "$row" ] && echo "$t,$row"
    sleep 1
    t=$((t + 1))
  done
) >"$tmp/rss.csv" &
sampler=$!

legs=(no_buffer extra_buffer extra_buffer_lazy extra_buffer:overlap extra_buffer_lazy:overlap
  no_buffer extra_buffer extra_buffer_lazy)
per=$((ops / procs))
echo "soak: $((procs * workers)) sessions on $procs instances, $ops operations" >&2
start=$(date +%s.%N)
for i in $(seq 0 $((procs - 1))); do
  leg=${legs[$i]}
  st=${leg%:overlap}
  extra=()
  [ "$leg" != "$st" ] && extra=(--overlap-scheduling)
  "$hcsim" --socket "$tmp/s" --strategy "$st" --ops "$per" --workers "$workers" --seed $((100 + i)) \
    --json --progress false --model "soak-$i" --kv-tokens 16384 --slots 96 --max-context 1500 \
    --batch 4 --host-ratio 3 --prefetch "${extra[@]}" >"$tmp/sim-$i.json" 2>"$tmp/sim-$i.err" &
  sim_pid[i]=$!
done
# Progress every 10 s; the second at which each hcsim process ends is said as it ends (its
# workers' closing idle checks run then).
sims=("${sim_pid[@]}")
left=$procs
tick=0
while [ "$left" -gt 0 ]; do
  sleep 1
  tick=$((tick + 1))
  now=$(($(date +%s) - ${start%.*}))
  running=" $(jobs -rp | tr '\n' ' ') "
  for i in "${!sim_pid[@]}"; do
    [[ "$running" == *" ${sim_pid[i]} "* ]] && continue
    echo "soak: $now s, hcsim $i (${legs[$i]}) ended" >&2
    unset 'sim_pid[i]'
    left=$((left - 1))
  done
  [ $((tick % 10)) -eq 0 ] &&
    echo "soak: $now s, node RSS $(tail -1 "$tmp/rss.csv" | cut -d, -f2) KiB (anon, file, shared memory: $(tail -1 "$tmp/rss.csv" | cut -d, -f3-5 | sed 's/,/, /g'))" >&2
done
wait "${sims[@]}" 2>/dev/null
end=$(date +%s.%N)
kill -TERM "$pid"
wait "$pid"
node_exit=$?
kill "$sampler" 2>/dev/null
[ -n "${HC_SOAK_RSS:-}" ] && cp "$tmp/rss.csv" "$HC_SOAK_RSS"
if [ -n "${HC_SOAK_KEEP:-}" ]; then  # the run's logs, for a look after it
  mkdir -p "$HC_SOAK_KEEP"
  cp "$tmp/log" "$tmp"/sim-* "$tmp/rss.csv" "$HC_SOAK_KEEP"/ 2>/dev/null
  echo "soak: logs kept in $HC_SOAK_KEEP" >&2
fi

$py - "$tmp" "$procs" "$workers" "$start" "$end" "$node_exit" <<'EOF'
import json, sys, glob, os
tmp, procs, workers, start, end, node_exit = sys.argv[1:7]
seconds = float(end) - float(start)
tot = {"ops": 0, "leaks": 0, "mismatches": 0, "errors": 0, "finished": 0, "aborted": 0,
       "steps": 0}
hits = {"l1": 0, "l2": 0, "l3": 0}
buckets = {}
lat_max = 0
failed = []
for f in sorted(glob.glob(os.path.join(tmp, "sim-*.json"))):
    try:
        r = json.load(open(f))
    except Exception:
        failed.append(os.path.basename(f) + ": " + open(f.replace(".json", ".err")).read()[-300:])
        continue
    for k in tot:
        tot[k] += r.get(k, 0)
    for k in hits:
        hits[k] += r["hit_tokens"][k]
    for b, n in r.get("step_latency_buckets", []):
        buckets[b] = buckets.get(b, 0) + n
    lat_max = max(lat_max, r["step_latency_us"]["max"])

def upper(i, sub_bits=4):  # as latency_histogram::upper_of
    if i < (1 << sub_bits):
        return i
    shift = (i >> sub_bits) - 1
    sub = i & ((1 << sub_bits) - 1)
    return (((1 << sub_bits) | sub) << shift) + ((1 << shift) - 1)

def pct(q):
    n = sum(buckets.values())
    if n == 0:
        return 0
    rank = int(q * (n - 1)) + 1
    seen = 0
    for b in sorted(buckets):
        seen += buckets[b]
        if seen >= rank:
            return min(upper(b), lat_max)
    return lat_max

rss = [tuple(map(int, l.split(","))) for l in open(os.path.join(tmp, "rss.csv")) if "," in l]
warm_row = rss[len(rss) // 5] if rss else (0, 0)  # after 20 % of the run
end_row = rss[-1] if rss else (0, 0)
warm, final = warm_row[1], end_row[1]
peak = max((r[1] for r in rss), default=0)
report = {
    "sessions": int(procs) * int(workers), "instances": int(procs), "ops": tot["ops"],
    "seconds": round(seconds, 1), "ops_per_second": round(tot["ops"] / seconds) if seconds else 0,
    "steps": tot["steps"],
    "step_latency_us": {"p50": pct(0.5), "p99": pct(0.99), "p999": pct(0.999), "max": lat_max},
    "rss_kib": {"after_warmup": warm, "end": final, "peak": peak,
                "growth_after_warmup_pct": round(100.0 * (final - warm) / warm, 1) if warm else None},
    "rss_parts_kib": {name: dict(zip(("anon", "file", "shmem"), row[2:5]))
                      for name, row in (("after_warmup", warm_row), ("end", end_row)) if len(row) >= 5},
    "hit_tokens": hits, "finished": tot["finished"], "aborted": tot["aborted"],
    "leaks": tot["leaks"], "mismatches": tot["mismatches"], "errors": tot["errors"],
    "failed_hcsim": failed, "node_exit": int(node_exit),
}
print(json.dumps(report))
bad = tot["leaks"] or tot["mismatches"] or tot["errors"] or failed or int(node_exit) != 0
sys.exit(1 if bad else 0)
EOF
