# shellcheck shell=bash
# Sourced by the tools' shell scripts that drive one node (tools/hcsim/long_run.sh,
# random_configs.sh, tools/soak.sh).
#   start_node DAEMON DIR [ARG...]
#                           starts DAEMON on DIR/s, its L3 under DIR/data, metrics off, with
#                           ARGs added, its output in DIR/log; sets node_pid. Returns 0 once the node logs
#                           that it is ready; else prints its log and returns 2 (it exited,
#                           or was not ready within 10 s).
#   stop_node               ends the node started last (nothing if none); for an EXIT trap.
#   start_build_node BUILD [ARG...]
#                           what the scripts begin with: sets daemon and hcsim to BUILD's
#                           binaries (returns 2 saying so if one is missing), tmp to a new
#                           folder that an EXIT trap removes with the node, and starts the
#                           node there with the ARGs (start_node's status).
node_pid=
start_node() {
  local daemon=$1 dir=$2
  shift 2
  "$daemon" --socket "$dir/s" --metrics off --data-dir "$dir/data" "$@" >"$dir/log" 2>&1 &
  node_pid=$!
  for _ in $(seq 200); do
    grep -q "hybridcached ready" "$dir/log" 2>/dev/null && return 0
    kill -0 "$node_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "hybridcached did not start:"
  cat "$dir/log"
  return 2
}
stop_node() {
  [ -n "$node_pid" ] && kill "$node_pid" 2>/dev/null
  wait 2>/dev/null
  return 0
}
start_build_node() {
  daemon=$1/actors/daemon/hybridcached
  hcsim=$1/tools/hcsim/hcsim
  shift
  if [ ! -x "$daemon" ] || [ ! -x "$hcsim" ]; then
    echo "build first: $daemon, $hcsim" >&2
    return 2
  fi
  tmp=$(mktemp -d)
  trap 'stop_node; rm -rf "$tmp"' EXIT
  start_node "$daemon" "$tmp" "$@"
}
