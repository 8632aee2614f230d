#!/usr/bin/env bash
# Installs the Debian dependencies, builds, and runs the whole test suite: the release
# build first, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer,
# then every libFuzzer target for a short budget (HC_FUZZ_SECONDS each, default 60).
#   scripts/test.sh            # release + asan + fuzz
#   scripts/test.sh --fast     # release only
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

bash scripts/install-deps.sh

run_preset() {
  local preset=$1
  echo "== [$preset] configure + build"
  cmake --preset "$preset" > "build-$preset.log" 2>&1 || { cat "build-$preset.log"; exit 1; }
  cmake --build --preset "$preset" -j "$jobs" 2>&1 | tail -n 3
  echo "== [$preset] tests"
  ctest --preset "$preset" -j "$jobs"
}

run_fuzz() {
  echo "== [fuzz] configure + build"
  cmake --preset fuzz > build-fuzz.log 2>&1 || { cat build-fuzz.log; exit 1; }
  cmake --build --preset fuzz -j "$jobs" 2>&1 | tail -n 3
  echo "== [fuzz] ${HC_FUZZ_SECONDS:-60} s per target"
  bash tests/fuzz/run.sh "${HC_FUZZ_SECONDS:-60}"
}

run_preset release
if [ "${1:-}" != "--fast" ]; then
  run_preset asan
  run_fuzz
fi
