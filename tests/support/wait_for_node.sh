# Sourced by the shell tests: wait_for_node PID LOG waits until the node logs that it is
# ready; calls the caller's `fail` if it exits first or does not start within 10 s.
wait_for_node() {
  local pid=$1 log=$2
  for _ in $(seq 200); do
    grep -q "hybridcached ready" "$log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "the node exited during start-up"
    sleep 0.05
  done
  fail "the node did not start"
}
