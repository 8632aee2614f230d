#!/usr/bin/env bash
# The hcctl replay contract: --check exits 0 on every bundled SGLang trace, exits 1 and
# names line, field and both values on a corrupted one, and exits 2 on unreadable input or
# flags that would do nothing; without flags it prints one result line per op with the
# fields of the op's expect.
set -u
hcctl=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in "$data"/*.jsonl.gz; do
  "$hcctl" replay --check --quiet "$t" || { echo "FAIL: $t does not replay"; exit 1; }
done
# Corrupt one expected value: the replay must stop there with a precise message.
gzip -dc "$data/p64_ctx4k_c100.jsonl.gz" | sed '500s/"kv_avail":\([0-9]*\)/"kv_avail":1\1/' > "$tmp/bad.jsonl"
"$hcctl" replay --check --quiet "$tmp/bad.jsonl" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: corrupted trace gave exit $rc, want 1"; exit 1; }
grep -q "line 500" "$tmp/err" && grep -q "kv_avail" "$tmp/err" || { echo "FAIL: message: $(cat "$tmp/err")"; exit 1; }
# Without flags: one result line per op, in order, carrying every field of the op's expect
# with SGLang's value (the cache agrees with it on the bundled traces).
"$hcctl" replay "$data/conf_p1_pressure.jsonl.gz" > "$tmp/lines" || { echo "FAIL: replay without flags"; exit 1; }
/usr/bin/python3 - "$data/conf_p1_pressure.jsonl.gz" "$tmp/lines" <<'EOF' || exit 1
import gzip, json, sys
ops = [json.loads(line) for line in gzip.open(sys.argv[1], "rt")][1:]
lines = [json.loads(line) for line in open(sys.argv[2])]
if len(lines) != len(ops):
    sys.exit(f"FAIL: {len(lines)} result lines for {len(ops)} ops")
for op, got in zip(ops, lines):
    if (got.get("op"), got.get("i")) != (op["op"], op["i"]):
        sys.exit(f"FAIL: result line for op {op['i']} ({op['op']}) is {got}")
    for k, v in op.get("expect", {}).items():
        if k not in got or got[k] != v:
            sys.exit(f"FAIL: op {op['i']} ({op['op']}): {k} = {got.get(k, 'missing')}, the trace expects {v}")
EOF
# Bad input: missing file, garbage.
"$hcctl" replay --check "$tmp/missing.jsonl" 2>/dev/null; [ $? -eq 2 ] || { echo "FAIL: missing file"; exit 1; }
echo '{"op":"config"' > "$tmp/garbage.jsonl"
"$hcctl" replay --check "$tmp/garbage.jsonl" 2>/dev/null; [ $? -eq 2 ] || { echo "FAIL: garbage"; exit 1; }
"$hcctl" replay --bench --json "$data/conf_p1_pressure.jsonl.gz" > "$tmp/bench" || { echo "FAIL: bench"; exit 1; }
grep -q '"ops_per_s"' "$tmp/bench" || { echo "FAIL: bench: $(cat "$tmp/bench")"; exit 1; }
# Each match / cache_unfinished / finish row carries its memory floor and the ratio to it.
for op in match cache_unfinished finish; do
  /usr/bin/python3 - "$tmp/bench" "$op" <<'PY' || { echo "FAIL: bench: no floor for $op"; exit 1; }
import json, sys
row = json.load(open(sys.argv[1]))["per_op"][sys.argv[2]]
for k in ("floor_median_us", "x_floor", "warm_floor_median_us", "x_warm_floor"):
    assert row[k] > 0, (k, row)
PY
done
# The same as a table: a row per op kind, and the whole trace's rate.
"$hcctl" replay --bench "$data/conf_p1_pressure.jsonl.gz" > "$tmp/table" || { echo "FAIL: bench table"; exit 1; }
grep -Eq '^match +[1-9][0-9]* +[0-9.]+ +[0-9.]+ +[0-9.]+' "$tmp/table" &&
  grep -Eq '^whole trace: [1-9][0-9]* ops/s' "$tmp/table" || { echo "FAIL: bench table: $(cat "$tmp/table")"; exit 1; }
# The index's memory per cached token: a measurement with its parts, and no node address.
if "$hcctl" replay --memory --json "$data/p64_ctx4k_c100.jsonl.gz" > "$tmp/mem" 2> "$tmp/err"; then
  for f in cached_tokens bytes_at_start bytes_at_end growth_bytes_per_cached_token; do
    grep -Eq "\"$f\":[1-9]" "$tmp/mem" || { echo "FAIL: --memory: no $f in $(cat "$tmp/mem")"; exit 1; }
  done
  "$hcctl" replay --memory "$data/p64_ctx4k_c100.jsonl.gz" > "$tmp/memtext" &&
    grep -Eq '^per cached token: [0-9.]+ bytes of growth, [0-9.]+ in all' "$tmp/memtext" ||
    { echo "FAIL: --memory text: $(cat "$tmp/memtext")"; exit 1; }
elif grep -q mallinfo2 "$tmp/err"; then
  echo "--memory not checked here: $(cat "$tmp/err")"  # a sanitizer build
else
  echo "FAIL: --memory: $(cat "$tmp/err")"; exit 1
fi
"$hcctl" --socket /nonexistent replay --memory "$data/p64_ctx4k_c100.jsonl.gz" 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: --memory through a node must be refused"; exit 1; }
# Flags that do nothing where they are given are refused (exit 2, naming them), not ignored:
# before, --phase of no trace printed an empty table, and --memory --check checked nothing.
for args in "--phase warm" "--repeat 3" "--bench --phase bogus" "--json" "--check --json" \
  "--memory --check" "--memory --bench"; do
  # shellcheck disable=SC2086  # $args is several words
  "$hcctl" replay -q $args "$data/conf_p1_pressure.jsonl.gz" >"$tmp/out" 2>&1
  rc=$?
  [ $rc -eq 2 ] || { echo "FAIL: replay $args: exit $rc, want 2: $(cat "$tmp/out")"; exit 1; }
  grep -Eq -- "--(phase|repeat|json|memory|check|bench)" "$tmp/out" ||
    { echo "FAIL: replay $args did not name the option: $(cat "$tmp/out")"; exit 1; }
done
"$hcctl" replay -q --bench --phase measure --repeat 2 "$data/conf_p1_pressure.jsonl.gz" >/dev/null ||
  { echo "FAIL: --bench --phase measure --repeat 2"; exit 1; }
echo "hcctl replay CLI: all checks passed"
