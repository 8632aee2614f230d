# Sourced by the shell tests, to start and stop their nodes. wait_for_node PID LOG waits
# until the node logs that it is ready; calls the caller's `fail` if it exits first or does
# not start within 10 s. wait_for_ping and stop_node: below.
wait_for_node() {
  local pid=$1 log=$2
  for _ in $(seq 200); do
    grep -q "hybridcached ready" "$log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || fail "the node exited during start-up"
    sleep 0.05
  done
  fail "the node did not start"
}

# stop_node PID stops the node as an operator would (SIGTERM: it unlinks its shared memory
# and its marker), and kills it only if it has not stopped within 10 s.
stop_node() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# wait_for_ping HCCTL PID SOCKET waits until the node PID answers a ping on SOCKET, for a
# node whose log the test does not read (it has none, or a reader that went away). Status 1
# if the node exits first or does not answer within 10 s.
wait_for_ping() {
  local hcctl=$1 pid=$2 socket=$3
  for _ in $(seq 200); do
    "$hcctl" --socket "$socket" --timeout 1 ping >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}
