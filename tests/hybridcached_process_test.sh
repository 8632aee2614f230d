#!/usr/bin/env bash
# hybridcached as a separate process: config file (one polling scheduler thread), socket mode 0600,
# named threads, hcctl ping /
# inspect (the process, its settings as --check-config prints them) / replay --check / top
# over the socket, /metrics scraped over HTTP with the documented
# series, SIGTERM -> exit status 0, ping failing once the node is gone (and giving up on a
# socket that never answers, --timeout), a corrupt L3 index
# moved aside at the next start, a store of another format refused and left as it was, a
# --data-dir or L3 store that cannot be created refused with exit status 2, so is a config
# file key that names no option, and --tcp
# refused without a token file or with a short secret; a token file's secret read the same
# by the node and hcctl whatever its line end; a node whose log reader went away serving on;
# a second node on the first one's socket, ports or data dir refused, saying why (the data
# dir's holder by pid), leaving no socket; --version as the node's ping says it; hcctl
# failing when its output cannot be written; a node started without standard streams
# writing its log to none of its own files.
#   tests/hybridcached_process_test.sh HYBRIDCACHED HCCTL DATA_DIR L3_FORMAT_MARKER_TOOL
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
daemon=$1 hcctl=$2 data=$3 marker_tool=$4
tmp=$(mktemp -d)
pid= mute= tcp_pid= ev_pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  [ -n "$ev_pid" ] && kill -9 "$ev_pid" 2>/dev/null
  [ -n "$mute" ] && kill "$mute" 2>/dev/null
  [ -n "$tcp_pid" ] && kill -9 "$tcp_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- node log:"; cat "$tmp/log" || true; exit 1; }

sock=$tmp/node.sock
cat > "$tmp/node.conf" <<CONF
socket = "$sock"
metrics = "127.0.0.1:0"
data-dir = "$tmp/data"
log-level = "debug"
l3-direct-io = false
threads = 1
actor-poll-attempts = 20000
step-spin-us = 50
CONF
"$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
[ -S "$sock" ] || fail "no socket at $sock (config file not applied?)"
[ "$(stat -c %a "$sock")" = 600 ] || fail "socket mode is $(stat -c %a "$sock"), want 600"
[ -d "$tmp/data" ] || fail "data dir not created"

"$hcctl" --socket "$sock" ping >/dev/null || fail "ping"
# The node's own threads carry names (README, Operations), beside CAF's and RocksDB's.
names=$(cat /proc/"$pid"/task/*/comm)
for want in hc-rpc hc-l3-flush caf.actor rocksdb:low; do
  grep -qx -- "$want" <<<"$names" || fail "no thread named $want: $(echo $names)"
done
"$hcctl" --socket "$sock" ping --json | grep -q '"ok":true' || fail "ping --json"
# --version: the release and the protocol, as the node answers them to a ping.
pinged=$("$hcctl" --socket "$sock" ping --json | /usr/bin/python3 -c \
  'import json, sys; r = json.load(sys.stdin); print("%s (protocol %d)" % (r["node_version"], r["protocol_version"]))')
for tool in "$daemon" "$hcctl"; do
  v=$("$tool" --version) || fail "$tool --version exited non-zero"
  [ "$v" = "$(basename "$tool") $pinged" ] || fail "$tool --version says '$v', the node '$pinged'"
done
"$hcctl" --socket "$sock" replay --check -q "$data/conf_p64_pressure.jsonl.gz" || fail "replay --check over RPC"
# inspect: what the JSON holds, for people — the L3 store, each instance's tree, what it
# served and its stream (before, the L3 store was a raw JSON line and the served counters
# and the host tier were missing).
"$hcctl" --socket "$sock" inspect >"$tmp/inspect" || fail "inspect"
"$hcctl" --socket "$sock" inspect --json >"$tmp/inspect.json" || fail "inspect --json"
/usr/bin/python3 - "$tmp/inspect" "$tmp/inspect.json" <<'PY' || fail "inspect: $(cat "$tmp/inspect")"
import json, re, sys
text, doc = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
l3 = doc["host_storage"]["l3"]
assert re.search(r"^L3 store: %d values, " % l3["values"], text, re.M), "no L3 store line"
assert re.search(r"^  backups: %d \(%d failed, " % (l3["backups"], l3["backup_failures"]), text, re.M)
assert re.search(r"^invariant violations: 0$", text, re.M), "no invariant line"
assert doc["instances"], "no instance after the replay"
for inst in doc["instances"]:
    t, served = inst["tree"], inst["tree"]["served"]
    block = text.split("instance %d [%s]\n" % (t["instance"], inst["fingerprint"]))[1].split("\ninstance ")[0]
    assert "  KV tokens: %d free of %d" % (t["kv_available"], t["kv_capacity"]) in block, block
    want = "  served: %d steps, %d commands (%d errors), %d matches (%d KV / %d resumable" % (
        served["steps"], served["commands"], served["command_errors"], served["matches"],
        served["matched_kv_tokens"], served["matched_resumable_tokens"])
    assert want in block, (want, block)
    assert ("  L2 pools: " in block) == isinstance(t.get("host"), dict), block
assert any(i["tree"]["served"]["steps"] > 0 for i in doc["instances"]), "the replay served no step"
PY
# inspect names the process: its release and pid, and every setting it runs with — each as
# --check-config prints it for the same config file, the file's keys listed as given.
"$daemon" --config "$tmp/node.conf" --check-config >"$tmp/checked" 2>"$tmp/checked.err" ||
  fail "--check-config beside the node: $(cat "$tmp/checked.err")"
/usr/bin/python3 - "$tmp/inspect" "$tmp/inspect.json" "$tmp/checked" "$tmp/node.conf" "$pid" \
  "$pinged" <<'PY' || fail "inspect's node: $(head -3 "$tmp/inspect")"
import json, re, sys
text, doc = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
checked, conf, pid, release = open(sys.argv[3]).read(), open(sys.argv[4]).read(), sys.argv[5], sys.argv[6]
node = doc["node"]
assert node["pid"] == int(pid), node
first = text.splitlines()[0]
assert first.startswith("node: hybridcached %s, pid %s, up " % (release, pid)), first
want = {}
for line in checked.splitlines():
    m = re.fullmatch(r"# ([a-z0-9-]+) = \(not set\)", line)
    if m:
        want[m[1]] = None
        continue
    m = re.fullmatch(r"# ([a-z0-9-]+) = (\S+)  \(the default here: .*\)", line)
    if m:
        want[m[1]] = m[2]
        continue
    m = re.fullmatch(r"([a-z0-9-]+) = (.*)", line)
    if m:
        v = m[2]
        want[m[1]] = v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'" else v
assert len(want) > 20, checked
assert node["settings"] == want, (node["settings"], want)
given = [l.split("=")[0].strip() for l in conf.splitlines() if "=" in l]
assert sorted(node["given"]) == sorted(given), (node["given"], given)
for key in given:
    assert "%s = " % key in text.splitlines()[1], (key, text.splitlines()[1])
PY
"$hcctl" --socket "$sock" stats >"$tmp/stats" || fail "stats"
grep -Eq '^matches +[1-9]' "$tmp/stats" || fail "stats: no matches counted: $(cat "$tmp/stats")"
"$hcctl" --socket "$sock" stats --json | grep -Eq '"pressure_evicted_slots":[1-9]' ||
  fail "stats --json: no pressure evictions"
"$hcctl" --socket "$sock" inspect --json | grep -q '"instances"' || fail "inspect --json"
"$hcctl" --socket "$sock" inspect --blocks >"$tmp/blocks" || fail "inspect --blocks"
grep -Eq 'device KV pages: [1-9][0-9]*, with an SSM checkpoint: [0-9]+ \(no KV events published' \
  "$tmp/blocks" || fail "inspect --blocks: $(cat "$tmp/blocks")"

# hcctl top: each refresh's rates are its counters' growth over its interval (checked on
# consecutive JSON lines, whatever the load did meanwhile); the replay above is in the totals.
"$hcctl" --socket "$sock" top --interval 0.2 --count 3 --json >"$tmp/top.json" || fail "top --json"
/usr/bin/python3 - "$tmp/top.json" <<'PY' || fail "top --json: $(cat "$tmp/top.json")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 3, rows
for a, b in zip(rows, rows[1:]):
    for k, r in b["rates"].items():
        want = max(0.0, b["totals"][k] - a["totals"][k]) / b["interval_s"]
        assert abs(r - want) <= 1e-9 * max(1.0, want), (k, r, want)
assert rows[-1]["totals"]["steps"] > 0, "the replay's steps are counted"
assert rows[-1]["gauges"]["instances"] >= 1
PY
"$hcctl" --socket "$sock" top --interval 0.1 --count 1 | grep -q "KV hit tokens/s" || fail "top"
# Output that cannot be written fails the command: on a full disk it says so (a script's
# `hcctl stats --json > f` found a short file and status 0); a reader that went away ends
# `top` (Cap'n Proto ignores SIGPIPE: `hcctl top | head -1` polled the node for ever).
if [ -w /dev/full ]; then
  rc=0
  "$hcctl" --socket "$sock" stats --json >/dev/full 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] && grep -q "hcctl: cannot write its output: No space left on device" "$tmp/err" ||
    fail "hcctl stats to a full disk: status $rc, want 1 saying so: $(cat "$tmp/err")"
fi
rc=0
# shellcheck disable=SC2016  # expanded by the inner shell
timeout 20 bash -c '"$0" --socket "$1" top --interval 0.1 2>"$2" | head -1 >/dev/null
  exit "${PIPESTATUS[0]}"' "$hcctl" "$sock" "$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "hcctl top whose reader went away: status $rc, want 1 (124: it ran on)"
[ ! -s "$tmp/err" ] || fail "hcctl top whose reader went away said: $(cat "$tmp/err")"

port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/log" | head -1 | sed 's/.*://')
[ -n "$port" ] || fail "no metrics address in the log"
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
cat <&3 >"$tmp/metrics"
exec 3<&-
for series in hybridcache_match_requests_total hybridcache_hit_tokens_total \
  hybridcache_inserted_tokens_total hybridcache_evicted_tokens_total \
  hybridcache_evicted_slots_total hybridcache_tombstones_created_total \
  hybridcache_forward_ops_total hybridcache_kv_pool_tokens \
  hybridcache_ssm_pool_slots hybridcache_sessions hybridcache_rpc_latency_seconds_bucket \
  hybridcache_forward_fence_wait_seconds_bucket; do
  grep -q "^$series" "$tmp/metrics" || fail "metric $series missing"
done
grep -Eq '^hybridcache_match_requests_total\{tier="l1"\} [1-9]' "$tmp/metrics" ||
  fail "L1 match counter did not count the replay"
grep -Eq '^hybridcache_evicted_slots_total\{reason="pressure"\} [1-9]' "$tmp/metrics" ||
  fail "the pressure trace's allocation-driven evictions were not counted"
grep -Eq '^hybridcache_tombstones_created_total\{cause="split"\} [1-9]' "$tmp/metrics" ||
  fail "no tombstone counted for the trace's splits"
grep -q 'hybridcache_rpc_latency_seconds_count{method="step"}' "$tmp/metrics" ||
  fail "no RPC latency for step"

# A second node on what the first one holds — its socket, a TCP port in use (the first
# one's metrics) for its metrics, TCP or KV events — is refused with status 2 saying why,
# before it serves, and the first one serves on.
printf 'second-node-secret-0123456789\n' >"$tmp/second.token"
for args in "--socket $sock --metrics off" \
  "--socket $tmp/second.sock --metrics 127.0.0.1:$port" \
  "--socket $tmp/second.sock --metrics off --tcp 127.0.0.1:$port --token-file $tmp/second.token" \
  "--socket $tmp/second.sock --metrics off --kv-events tcp://127.0.0.1:$port"; do
  rc=0
  # shellcheck disable=SC2086  # $args is several words
  timeout 20 "$daemon" $args --data-dir "$tmp/second" --l3 false >"$tmp/second.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "a second node with '$args': exit status $rc, want 2: $(cat "$tmp/second.log")"
  grep -q "another process is serving on it\|another process listens there\|Address already in use" \
    "$tmp/second.log" ||
    fail "a second node with '$args' did not say why: $(cat "$tmp/second.log")"
  [ ! -e "$tmp/second.sock" ] || fail "a node refused with '$args' left its socket"
  "$hcctl" --socket "$sock" ping >/dev/null || fail "the first node stopped serving"
done
# ... and so is one on the first one's --data-dir, naming the process that holds it.
rc=0
timeout 20 "$daemon" --socket "$tmp/second.sock" --metrics off --data-dir "$tmp/data" \
  >"$tmp/second.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -qF "$tmp/data/l3 is in use by process $pid (another hybridcached on this --data-dir?)" \
  "$tmp/second.log" ||
  fail "a second node on the first one's data dir: status $rc, want 2 naming pid $pid: $(cat "$tmp/second.log")"
"$hcctl" --socket "$sock" ping >/dev/null || fail "the first node stopped serving"
# ... and so is one on the ipc:// path of another node's KV events: ZeroMQ replaced the
# first node's socket file without a word, and its subscribers then heard nothing. A stale
# one (a node that was killed) is replaced.
"$daemon" --socket "$tmp/ev-node.sock" --metrics off --l3 false --kv-events "ipc://$tmp/ev.ipc" \
  --kv-events-replay "ipc://$tmp/evr.ipc" >"$tmp/ev.log" 2>&1 &
ev_pid=$!
wait_for_node "$ev_pid" "$tmp/ev.log"
# The endpoints' socket files are the node's user's alone, as its socket (events carry the
# users' tokens); ZeroMQ would have left them to the umask.
[ "$(stat -c %a "$tmp/ev.ipc" "$tmp/evr.ipc" | tr '\n' ' ')" = "600 600 " ] ||
  fail "event endpoints of mode $(stat -c %a "$tmp/ev.ipc" "$tmp/evr.ipc"), want 600"
files="$(stat -c %i "$tmp/ev.ipc" "$tmp/evr.ipc")"
for args in "--kv-events ipc://$tmp/ev.ipc" \
  "--kv-events ipc://$tmp/ev2.ipc --kv-events-replay ipc://$tmp/evr.ipc"; do
  rc=0
  # shellcheck disable=SC2086  # $args is several words
  timeout 20 "$daemon" --socket "$tmp/second.sock" --metrics off --l3 false $args \
    >"$tmp/second.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -q "another process is serving on it.*another --kv-events" "$tmp/second.log" ||
    fail "a second node with '$args': exit status $rc, want 2 saying why: $(cat "$tmp/second.log")"
done
[ "$(stat -c %i "$tmp/ev.ipc" "$tmp/evr.ipc")" = "$files" ] ||
  fail "a refused node replaced the first one's event endpoints"
kill -9 "$ev_pid"
wait "$ev_pid" 2>/dev/null || true
"$daemon" --socket "$tmp/ev-node.sock" --metrics off --l3 false --kv-events "ipc://$tmp/ev.ipc" \
  --kv-events-replay "ipc://$tmp/evr.ipc" --group-access true >"$tmp/ev.log" 2>&1 &
ev_pid=$!
wait_for_node "$ev_pid" "$tmp/ev.log"
# --group-access: the node's group may connect to all three.
[ "$(stat -c %a "$tmp/ev-node.sock" "$tmp/ev.ipc" "$tmp/evr.ipc" | tr '\n' ' ')" = "660 660 660 " ] ||
  fail "--group-access: modes $(stat -c %a "$tmp/ev-node.sock" "$tmp/ev.ipc" "$tmp/evr.ipc"), want 660"
stop_node "$ev_pid"
ev_pid=
# Without an L3 store a node has nothing to keep in its data dir and does not create it.
[ ! -e "$tmp/second" ] || fail "a node started with --l3 false created its --data-dir"

kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "SIGTERM exit status $rc"
[ ! -e "$sock" ] || fail "socket left behind"
if "$hcctl" --socket "$sock" ping 2>/dev/null; then fail "ping succeeded with the node down"; fi

# A socket that accepts but never answers (a hung node, another program) must not hang a
# health check: hcctl gives up after --timeout, exit status 1, saying so.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
held = []
while True:
    held.append(s.accept()[0])
' "$tmp/mute.sock" &
mute=$!
for _ in $(seq 100); do [ -S "$tmp/mute.sock" ] && break; sleep 0.05; done
for cmd in ping stats inspect; do
  rc=0
  # (a hung hcctl is killed by timeout: exit status 124)
  timeout 20 "$hcctl" --socket "$tmp/mute.sock" --timeout 0.5 $cmd >/dev/null 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] || fail "hcctl $cmd against a mute socket: exit status $rc, want 1"
  grep -q "no answer within 500 ms" "$tmp/err" || fail "hcctl $cmd: $(cat "$tmp/err")"
done
kill "$mute"
wait "$mute" 2>/dev/null || true
mute=

# An L3 index found corrupt at start (here CURRENT, as bit rot leaves it) does not keep the
# node from starting: the store is moved aside, the node serves with an empty L3, says so
# in its log and counts the fault.
printf 'garbage' >"$tmp/data/l3/index/CURRENT"
"$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
"$hcctl" --socket "$sock" ping >/dev/null || fail "ping after a corrupt L3 index"
grep -q "the L3 store's index was corrupt: .*Corruption.*index moved to $tmp/data/l3.corrupt" "$tmp/log" ||
  fail "no warning naming the corruption and where the store went"
[ -f "$tmp/data/l3.corrupt/index/CURRENT" ] || fail "the corrupt store was not kept aside"
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$tmp/log" | head -1 | sed 's/.*://')
exec 3<>"/dev/tcp/127.0.0.1/$port"
printf 'GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n' >&3
cat <&3 >"$tmp/metrics"
exec 3<&-
grep -q '^hybridcache_faults_total{kind="l3_corrupt_store"} 1' "$tmp/metrics" ||
  fail "the quarantine was not counted"
kill -HUP "$pid"  # a closed terminal: a clean stop as well
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "SIGHUP exit status $rc after the quarantine"
grep -q "received SIGHUP, stopping" "$tmp/log" || fail "SIGHUP was not taken as a stop"

# A store of a format this build does not read (a later release's) stops the start with
# exit status 2, naming both formats and what to do, and is left as it was: not moved aside
# as a corrupt one is, its marker not rewritten. Given its own marker back, it serves.
ours=$("$marker_tool" "$tmp/data/l3") || fail "cannot read the L3 store's format marker"
"$marker_tool" "$tmp/data/l3" hybridcache-l3/99 >/dev/null || fail "cannot write another marker"
aside=$(stat -c %i.%Y "$tmp/data/l3.corrupt")
rc=0
timeout 20 "$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "a store of a later format: exit status $rc, want 2"
grep -qF "$tmp/data/l3 holds format 'hybridcache-l3/99', this build reads '$ours'; remove it or point --data-dir at another directory" \
  "$tmp/log" || fail "no error naming both formats and what to do"
if grep -q "another hybridcached" "$tmp/log"; then fail "a hint about a lock for a format error"; fi
[ "$("$marker_tool" "$tmp/data/l3")" = hybridcache-l3/99 ] || fail "the refused store's marker was rewritten"
[ "$(stat -c %i.%Y "$tmp/data/l3.corrupt")" = "$aside" ] || fail "the refused store was moved aside"
[ ! -e "$sock" ] || fail "a node that did not start left its socket"
"$marker_tool" "$tmp/data/l3" "$ours" >/dev/null || fail "cannot write the marker back"
"$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
"$hcctl" --socket "$sock" ping >/dev/null || fail "ping with the store's own marker back"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "SIGTERM exit status $rc with the marker back"

# A --data-dir that cannot be a directory, or one whose L3 store cannot be created, stops
# the start with exit status 2 and a message naming the path (never a crash, nothing served).
touch "$tmp/a_file"
rc=0
timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/a_file/sub" >"$tmp/log2" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--data-dir under a file: exit status $rc, want 2"
grep -q "cannot create --data-dir $tmp/a_file/sub: Not a directory" "$tmp/log2" ||
  fail "no error naming the --data-dir: $(cat "$tmp/log2")"
mkdir -p "$tmp/d3" && touch "$tmp/d3/l3"
rc=0
timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d3" >"$tmp/log2" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "an L3 path that is a file: exit status $rc, want 2"
grep -q "cannot open the L3 store in $tmp/d3/l3" "$tmp/log2" ||
  fail "no error naming the L3 store: $(cat "$tmp/log2")"
[ ! -e "$tmp/n2.sock" ] || fail "a node that did not start left its socket"

# A config file key that names no option (a typo, a section) stops the start with exit
# status 2 naming it: the node does not start without the setting its operator wrote.
for text in 'l3-capcity = 1TB' '[node]
threads = 2'; do
  printf '%s\n' "$text" >"$tmp/typo.conf"
  rc=0
  timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d2" --config "$tmp/typo.conf" \
    >"$tmp/log2" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "config key '$text': exit status $rc, want 2"
  grep -q "config line 1: '\(l3-capcity\|\[node\]\)'" "$tmp/log2" ||  # a section: its line
    fail "no error naming the config key: $(cat "$tmp/log2")"
  grep -q "each key a long option's name" "$tmp/log2" || fail "no hint of the config's form"
  [ ! -e "$tmp/n2.sock" ] || fail "a node refused for its config left its socket"
done

# TCP only behind a token: --tcp without --token-file, or with too short a secret, is refused.
rc=0
timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d2" --tcp 127.0.0.1:0 >"$tmp/log2" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "--tcp without --token-file started"
grep -q "needs --token-file" "$tmp/log2" || fail "no error naming --token-file: $(cat "$tmp/log2")"
echo short >"$tmp/token"
# ... and --token-file without --tcp: the Unix socket takes no secret, so it is refused
# rather than read by nobody while its operator believes the socket guarded.
rc=0
timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d2" --token-file "$tmp/token" \
  >"$tmp/log2" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "--token-file without --tcp: exit status $rc, want 2"
grep -q "guards --tcp only" "$tmp/log2" || fail "no error naming --tcp: $(cat "$tmp/log2")"
rc=0
timeout 10 "$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d2" --tcp 127.0.0.1:0 --token-file "$tmp/token" \
  >"$tmp/log2" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "a 5-character token was accepted"

# One secret, however the token file ends its line: the node and hcctl read the first line
# without the blanks around it (cli/token_file.hpp), so a CRLF file and an LF file with the
# same secret both log in, and a wrong secret does not.
printf 'the-secret-0123456789\r\n' >"$tmp/token"
printf '  the-secret-0123456789 \n' >"$tmp/token.lf"
printf 'the-secret-0123456789X\n' >"$tmp/token.wrong"
printf ' \r\nthe-secret-0123456789\n' >"$tmp/token.blank"
"$daemon" --socket "$tmp/n2.sock" --metrics off --data-dir "$tmp/d2" --tcp 127.0.0.1:0 \
  --token-file "$tmp/token" >"$tmp/log2" 2>&1 &
tcp_pid=$!
wait_for_node "$tcp_pid" "$tmp/log2"
tcp=$(sed -n 's/.*serving on tcp \([^ ]*\) .*/\1/p' "$tmp/log2")
[ -n "$tcp" ] || fail "no TCP address in the log: $(cat "$tmp/log2")"
for f in token token.lf; do
  "$hcctl" --tcp "$tcp" --token-file "$tmp/$f" ping >/dev/null ||
    fail "the secret of $f ($(od -c "$tmp/$f" | head -1)) did not log in"
done
rc=0
"$hcctl" --tcp "$tcp" --token-file "$tmp/token.wrong" ping >"$tmp/out" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "wrong token" "$tmp/out" || fail "a wrong secret: status $rc, $(cat "$tmp/out")"
# hcctl refuses (status 2, saying why) what could only fail at the node: no token file, or
# one whose first line is blank.
for args in "" "--token-file $tmp/token.blank"; do
  rc=0
  # shellcheck disable=SC2086  # $args is two words or none
  "$hcctl" --tcp "$tcp" $args ping >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || fail "hcctl --tcp with '$args': status $rc, want 2: $(cat "$tmp/out")"
  grep -q "needs --token-file\|no secret on its first line" "$tmp/out" ||
    fail "hcctl --tcp with '$args' did not say why: $(cat "$tmp/out")"
done
# ... and what names the node ambiguously: an empty --tcp (which reached the default
# socket, where another node may listen), --socket beside --tcp (one was ignored), a
# --token-file without --tcp (ignored: the socket needs no secret).
while IFS='|' read -r why args; do
  rc=0
  eval "set -- $args"
  "$hcctl" "$@" ping >"$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 2 ] && grep -q -- "$why" "$tmp/out" ||
    fail "hcctl $args: status $rc, want 2 saying '$why': $(cat "$tmp/out")"
done <<EOF
--tcp is empty|--tcp '' --token-file '$tmp/token'
give --socket or --tcp, not both|--socket '$tmp/n2.sock' --tcp '$tcp' --token-file '$tmp/token'
give --tcp too|--token-file '$tmp/token'
give --tcp too|--socket '$tmp/n2.sock' --token-file '$tmp/token'
EOF
"$hcctl" --tcp "$tcp" --token-file "$tmp/token" --timeout 5 stats >/dev/null ||
  fail "hcctl --tcp with its token file no longer reaches the node"
kill "$tcp_pid"
wait "$tcp_pid" || fail "the TCP node did not stop cleanly"
tcp_pid=

# A log reader that goes away (`hybridcached | head -1`, a log shipper restarted) does not
# take the node with it: SIGPIPE is ignored from the start, the node serves on and still
# stops cleanly. (The libraries ignore it too, but only once they start: before, a reader
# gone during start-up killed the node at its next log line.) The reader here opens the
# pipe and closes it at once, before the node writes its first line.
mkfifo "$tmp/logpipe"
true <"$tmp/logpipe" &
reader=$!
"$daemon" --socket "$tmp/n3.sock" --metrics off --data-dir "$tmp/d-logpipe" --log-level debug \
  >"$tmp/logpipe" 2>&1 &
tcp_pid=$!
wait "$reader"
wait_for_ping "$hcctl" "$tcp_pid" "$tmp/n3.sock" || fail "the node did not serve once its log reader had gone"
"$hcctl" --socket "$tmp/n3.sock" stats >/dev/null || fail "stats after the log reader went"
kill "$tcp_pid"
rc=0
wait "$tcp_pid" || rc=$?
tcp_pid=
[ "$rc" = 0 ] || fail "the node whose log reader went exited with status $rc (141 = SIGPIPE)"
[ ! -e "$tmp/n3.sock" ] || fail "the node whose log reader went left its socket"

# A node started without stdin, stdout and stderr (`2>&-`, a supervisor that closes them)
# has /dev/null on 0, 1 and 2, not the first files it opens: before, its log lines went into
# its shared-memory owner marker (--l3 false) or to an L3 directory, lost either way.
"$daemon" --socket "$tmp/n4.sock" --metrics off --l3 false --log-level debug <&- >&- 2>&- &
tcp_pid=$!
wait_for_ping "$hcctl" "$tcp_pid" "$tmp/n4.sock" || fail "the node started without standard streams did not serve"
for fd in 0 1 2; do
  target=$(readlink /proc/"$tcp_pid"/fd/$fd)
  [ "$target" = /dev/null ] || fail "the node started without standard streams has $target on $fd"
done
for f in /proc/"$tcp_pid"/fd/*; do
  target=$(readlink "$f") || continue
  case $target in
    /dev/shm/*-owner) [ ! -s "$target" ] || fail "the node wrote into its owner marker $target" ;;
  esac
done
kill "$tcp_pid"
rc=0
wait "$tcp_pid" || rc=$?
tcp_pid=
[ "$rc" = 0 ] || fail "the node started without standard streams exited with status $rc"
echo "hybridcached process test: ok"
