# shellcheck shell=bash
# build_preset PRESET [JOBS]: configures and builds the CMake preset PRESET with JOBS jobs
# (default: nproc), its whole output in build-PRESET.log. Prints where the build stands at
# every tenth of its steps (a first build takes minutes) and, when it fails, what failed:
# the compiler's errors (ninja's FAILED blocks) or the end of the configure log. Returns
# non-zero on failure. Sourced by scripts/test.sh and scripts/run.sh.
build_preset() {
  local preset=$1 jobs=${2:-$(nproc)}
  local log=build-$preset.log
  echo "== [$preset] configure (whole output: $log)"
  if ! cmake --preset "$preset" > "$log" 2>&1; then
    tail -n 60 "$log"
    echo "== [$preset] configure FAILED (whole output: $log)"
    return 1
  fi
  echo "== [$preset] build, $jobs jobs"
  # ninja writes one "[done/total] what" line a step when its output is not a terminal.
  if ! cmake --build --preset "$preset" -j "$jobs" 2>&1 | tee -a "$log" | awk '
      $1 ~ /^\[[0-9]+\/[0-9]+\]$/ {
        s = $1; gsub(/[][]/, "", s); split(s, n, "/")
        tenth = int(n[1] * 10 / n[2])
        if (tenth > shown) { shown = tenth; printf "   %3d%% %s\n", tenth * 10, $1; fflush() }
      }'; then
    if grep -q '^FAILED: ' "$log"; then
      grep -A 40 '^FAILED: ' "$log" | head -n 200
    else
      tail -n 60 "$log"
    fi
    echo "== [$preset] build FAILED (whole output: $log)"
    return 1
  fi
}
