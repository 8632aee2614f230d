#!/usr/bin/env bash
# hybridcached --log-format json (README "Run it"): from the config file, every line the node
# writes from start to stop — its own, RocksDB's, --check-config's verdict — is one JSON
# object with time, level and msg; the first names the settings given; a bad value is
# refused as at start.
#   tests/log_format_test.sh HYBRIDCACHED HCCTL
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
daemon=$1 hcctl=$2
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && { echo "--- log:"; cat "$tmp/log"; }; exit 1; }

# every_line_is_json FILE WANT...: each line of FILE is {"time", "level", "msg"} in that
# order, and some line's msg holds each WANT.
every_line_is_json() {
  /usr/bin/python3 - "$@" <<'PY' || fail "$1 is not JSON lines"
import json, sys
path, wants = sys.argv[1], sys.argv[2:]
lines = open(path, encoding="utf-8").read().splitlines()
assert lines, "no lines"
msgs = []
for n, line in enumerate(lines, 1):
    record = json.loads(line)
    assert list(record) == ["time", "level", "msg"], f"line {n}: {line}"
    assert record["level"] in ("error", "warn", "info", "debug"), f"line {n}: {line}"
    assert record["time"].endswith("Z") and len(record["time"]) == 24, f"line {n}: {line}"
    msgs.append(record["msg"])
for want in wants:
    assert any(want in m for m in msgs), f"no message holds {want!r}: {msgs}"
PY
}

cat >"$tmp/node.conf" <<CONF
socket = $tmp/node.sock
metrics = off
data-dir = $tmp/data
log-format = json
log-level = debug
CONF
"$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
"$hcctl" --socket "$tmp/node.sock" ping >/dev/null || fail "ping"
stop_node "$pid"
pid=
every_line_is_json "$tmp/log" "hybridcached ready" "received SIGTERM, stopping" "stopped" \
  "L3 store $tmp/data/l3 ready" \
  "(protocol 2) starting with socket = $tmp/node.sock, metrics = off, data-dir = $tmp/data, log-level = debug, log-format = json (the rest defaults"

"$daemon" --config "$tmp/node.conf" --check-config >/dev/null 2>"$tmp/check" ||
  fail "--check-config: $(cat "$tmp/check")"
every_line_is_json "$tmp/check" "the configuration is valid"

rc=0
"$daemon" --log-format xml --check-config >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "--log-format xml: exit $rc"
grep -q "xml not in {text,json}" "$tmp/err" || fail "--log-format xml: $(cat "$tmp/err")"
echo "log_format: ok"
