#!/usr/bin/env bash
# hybridcached --check-config (README "Run it"): prints every setting as a config file that
# reads back to the same settings, the defaults decided at start as comments; exits 0 beside
# a node already running on the same settings (it binds, creates and starts nothing), and 2
# naming each thing that would keep the node from starting: its socket's directory missing
# or not writable, a socket path too long or holding another file, a token file unreadable
# or too short, a data dir that is a file or cannot be created. A bad key exits 2 as at start.
#   tests/check_config_test.sh HYBRIDCACHED HCCTL
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

# check_fails WANT ARGS...: --check-config with ARGS exits 2 and its stderr has WANT.
check_fails() {
  local want=$1 rc=0
  shift
  "$daemon" "$@" --check-config >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = 2 ] || fail "--check-config $* exited $rc, want 2: $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "--check-config $*: no '$want' in: $(cat "$tmp/err")"
}

# 1. The defaults, in an empty directory: valid, every option of --help printed (as a key or
# as a comment line), and nothing created (no data dir, no socket).
mkdir "$tmp/empty"
(cd "$tmp/empty" && "$daemon" --socket "$tmp/empty/s.sock" --check-config >"$tmp/out" 2>"$tmp/err") ||
  fail "defaults: exit $?: $(cat "$tmp/err")"
grep -q "configuration is valid" "$tmp/err" || fail "defaults: no verdict: $(cat "$tmp/err")"
[ -z "$(ls -A "$tmp/empty")" ] || fail "--check-config created $(ls -A "$tmp/empty")"
help=$("$daemon" --help)
for opt in $(grep -oE -- '--[a-z0-9][a-z0-9-]*' <<<"$help" | sort -u); do
  case $opt in --help | --version | --config | --check-config) continue ;; esac
  grep -qE "^(# )?${opt#--} = " "$tmp/out" || fail "$opt is not in the printed settings"
done
for decided in max-request-tokens l3-index-memory l3-min-free; do
  grep -qE "^# $decided = [0-9]+  \(the default here: " "$tmp/out" ||
    fail "$decided's default as decided here is not printed: $(grep "$decided" "$tmp/out")"
done
grep -qx "# tcp = (not set)" "$tmp/out" || fail "an unset --tcp is not a comment"

# 2. The output reads back as the same settings: values with a ' #', spaces, units and
# booleans in other spellings, from the command line and from a config file.
cat >"$tmp/in.conf" <<CONF
socket = $tmp/a.sock
data-dir = "$tmp/data #1"
l3-capacity = 64 GB
l3-direct-io = on
max-request-tokens = 12345
CONF
"$daemon" --config "$tmp/in.conf" --l3-verify-every-read 1 --threads 3 --check-config \
  >"$tmp/first.conf" 2>"$tmp/err" || fail "round trip: exit $?: $(cat "$tmp/err")"
"$daemon" --config "$tmp/first.conf" --check-config >"$tmp/second.conf" 2>"$tmp/err" ||
  fail "the printed settings do not read back: $(cat "$tmp/err")"
diff "$tmp/first.conf" "$tmp/second.conf" >&2 || fail "the settings read back differently"
for want in "data-dir = \"$tmp/data #1\"" "l3-capacity = 68719476736" "l3-direct-io = true" \
  "l3-verify-every-read = true" "threads = 3" "max-request-tokens = 12345"; do
  grep -qxF "$want" "$tmp/first.conf" || fail "no line '$want' in: $(cat "$tmp/first.conf")"
done
[ ! -e "$tmp/data #1" ] || fail "--check-config created the data dir"

# 3. Beside a node already running on the same settings: valid, and the node serves on.
cat >"$tmp/node.conf" <<CONF
socket = $tmp/node.sock
metrics = 127.0.0.1:0
data-dir = $tmp/node-data
CONF
"$daemon" --config "$tmp/node.conf" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
"$daemon" --config "$tmp/node.conf" --check-config >/dev/null 2>"$tmp/err" ||
  fail "beside its running node: exit $?: $(cat "$tmp/err")"
"$hcctl" --socket "$tmp/node.sock" ping >/dev/null || fail "the running node stopped answering"
stop_node "$pid"
pid=

# 4. What would keep the node from starting, each named.
check_fails "--socket $tmp/no-dir/s.sock: no directory $tmp/no-dir" --socket "$tmp/no-dir/s.sock"
long=$tmp/$(printf 'x%.0s' $(seq 120)).sock
check_fails "a Unix socket path has at most 107 bytes" --socket "$long"
touch "$tmp/plain"
check_fails "--socket $tmp/plain: a file that is not a socket is there" --socket "$tmp/plain"
check_fails "--kv-events ipc://$tmp/no-dir/ev: no directory" --socket "$tmp/s.sock" \
  --kv-events "ipc://$tmp/no-dir/ev"
check_fails "--token-file $tmp/none: cannot be read" --socket "$tmp/s.sock" --tcp 127.0.0.1:0 \
  --token-file "$tmp/none"
echo short >"$tmp/token"
check_fails "has 5 characters; it needs at least 16" --socket "$tmp/s.sock" --tcp 127.0.0.1:0 \
  --token-file "$tmp/token"
check_fails "--data-dir $tmp/plain: $tmp/plain is not a directory" --socket "$tmp/s.sock" \
  --data-dir "$tmp/plain"
# Two problems: both named, one line each.
check_fails "no directory $tmp/no-dir" --socket "$tmp/no-dir/s.sock" --data-dir "$tmp/plain"
grep -qF "is not a directory" "$tmp/err" || fail "the second problem is not named"
# --l3 false: the data dir is not used, so not checked.
"$daemon" --socket "$tmp/s.sock" --l3 false --data-dir "$tmp/plain" --check-config \
  >/dev/null 2>"$tmp/err" || fail "--l3 false still checks --data-dir: $(cat "$tmp/err")"
# Permissions: as a user who may not write there (root may write anywhere).
as_nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
  echo "skipped: the permission checks (they need root, to run the node as nobody)"
elif ! "${as_nobody[@]}" "$daemon" --version >/dev/null 2>&1; then
  echo "skipped: the permission checks (nobody cannot run $daemon where it is)"
else
  mkdir -m 0755 "$tmp/ro" && chmod 0755 "$tmp"
  "${as_nobody[@]}" "$daemon" --socket "$tmp/ro/s.sock" --l3 false --check-config \
    >/dev/null 2>"$tmp/err" && fail "nobody may not write $tmp/ro"
  grep -qF "the directory $tmp/ro is not writable by this user" "$tmp/err" ||
    fail "as nobody: $(cat "$tmp/err")"
  "${as_nobody[@]}" "$daemon" --socket /tmp/hc-check-$$.sock --data-dir "$tmp/ro/sub/data" \
    --check-config >/dev/null 2>"$tmp/err" && fail "nobody may not create $tmp/ro/sub/data"
  grep -qF "cannot be created: $tmp/ro is not a writable directory" "$tmp/err" ||
    fail "as nobody: $(cat "$tmp/err")"
fi

# Settings it cannot write (a full disk) are an error, not a silent "valid".
rc=0
"$daemon" --socket "$tmp/s.sock" --check-config >/dev/full 2>"$tmp/err" || rc=$?
[ "$rc" = 1 ] || fail "--check-config >/dev/full: exit $rc, want 1"
grep -q "cannot write the settings: No space left on device" "$tmp/err" || fail "$(cat "$tmp/err")"

# 5. What the start refuses, --check-config refuses alike.
printf 'sockett = /tmp/x\n' >"$tmp/typo.conf"
rc=0
"$daemon" --config "$tmp/typo.conf" --check-config >/dev/null 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || fail "a config key that names no option: exit $rc"
grep -q "'sockett' is not an option" "$tmp/err" || fail "typo: $(cat "$tmp/err")"
check_fails "--tcp needs --token-file" --tcp 127.0.0.1:0
echo "check_config: ok"
