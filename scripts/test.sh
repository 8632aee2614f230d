#!/usr/bin/env bash
# Installs the Debian dependencies, builds, and runs the whole test suite: the release
# build first, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer,
# then every libFuzzer target for a short budget (HC_FUZZ_SECONDS each, default 60).
#   scripts/test.sh            # release + asan + fuzz
#   scripts/test.sh --fast     # release only
# Each build's whole output goes to build-<preset>.log; a failed one prints its errors.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "" | --fast) ;;
  *)
    echo "usage: scripts/test.sh [--fast]   (unknown argument: $1)" >&2
    exit 2
    ;;
esac
jobs=$(nproc)
# shellcheck source=scripts/lib/build_preset.sh
. scripts/lib/build_preset.sh

bash scripts/install-deps.sh

run_preset() {
  local preset=$1
  build_preset "$preset" "$jobs" || exit 1
  echo "== [$preset] tests"
  ctest --preset "$preset" -j "$jobs"
}

run_fuzz() {
  build_preset fuzz "$jobs" || exit 1
  echo "== [fuzz] ${HC_FUZZ_SECONDS:-60} s per target"
  bash tests/fuzz/run.sh "${HC_FUZZ_SECONDS:-60}"
}

run_preset release
if [ "${1:-}" != "--fast" ]; then
  run_preset asan
  run_fuzz
fi
