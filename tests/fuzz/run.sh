#!/usr/bin/env bash
# Runs every libFuzzer target of the `fuzz` preset for SECONDS each (default 60), starting
# from its seed corpus (tests/fuzz/corpus/<target>/) and regressions; new inputs go to
# build/fuzz/corpus/<target>/, crashes to build/fuzz/artifacts/. Exit status 1 if any
# target found something (the failing input's path is printed: copy it to
# tests/fuzz/regressions/<target>/ once fixed).
#   tests/fuzz/run.sh [SECONDS] [TARGET...]     # after: cmake --preset fuzz && cmake --build --preset fuzz
set -uo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(rpc executor trace_reader l3_value daemon_options)
bin=build/fuzz/tests/fuzz
mkdir -p build/fuzz/artifacts
failed=0
for t in "${targets[@]}"; do
  [ -x "$bin/fuzz_$t" ] || { echo "fuzz: $bin/fuzz_$t is not built (cmake --build --preset fuzz)"; exit 2; }
  work=build/fuzz/corpus/$t
  mkdir -p "$work" "tests/fuzz/regressions/$t"
  echo "== fuzz_$t for ${seconds}s"
  # -timeout: one input running 30 s is a hang; -rss_limit_mb: a runaway allocation.
  if ! "$bin/fuzz_$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -max_len=4096 \
      -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$t-" \
      "$work" "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" > "build/fuzz/$t.log" 2>&1; then
    failed=1
    echo "fuzz_$t FOUND SOMETHING:"
    grep -E 'ERROR|fuzz finding|SUMMARY|Test unit written' "build/fuzz/$t.log" | head -20
  fi
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "build/fuzz/$t.log" | tr '\n' ' '
  grep -E 'cov: [0-9]+' "build/fuzz/$t.log" | tail -1
done
exit $failed
