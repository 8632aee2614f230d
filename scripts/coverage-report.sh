#!/usr/bin/env bash
# Which lines, functions and branches of the product the tests run (clang source-based
# coverage). Build first (clang, Debug, CUDA off; ~15 min on 2 cores):
#
#   cmake --preset coverage && cmake --build --preset coverage -j2
#   scripts/coverage-report.sh                 # the whole suite, then the per-file table
#   scripts/coverage-report.sh -R RocksdbStore # ctest arguments select the tests
#   scripts/coverage-report.sh --no-run        # the report of the last run again
#   scripts/coverage-report.sh --show FILE     # one source file, line by line (counts, misses)
#
# Every process a test starts (test binaries, hybridcached, hcctl, the Python extension inside
# /usr/bin/python3) merges its counters into build/coverage/profiles/ as it exits; the merged
# profile is build/coverage/coverage.profdata. The table covers the product's own sources:
# tests/, generated code and system headers are left out. Exit status: ctest's (the report
# is printed either way), 2 for bad usage or a missing build.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build/coverage"
prof_dir="$build/profiles"
profdata="$build/coverage.profdata"
run=1
show=""
ctest_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-run) run=0 ;;
    --show) [ $# -ge 2 ] || { echo "coverage-report: --show needs a source file" >&2; exit 2; }
            show="$2"; run=0; shift ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ctest_args+=("$1") ;;
  esac
  shift
done

if [ ! -f "$build/build.ninja" ] || ! grep -q '^HC_COVERAGE:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "coverage-report: no coverage build in $build;" \
       "run: cmake --preset coverage && cmake --build --preset coverage -j2" >&2
  exit 2
fi
# The LLVM tools of the clang that built the tree (their profile format must match).
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
clang_major=$("$compiler" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
llvm_tool() {
  local t
  for t in "$1-$clang_major" "$1"; do
    command -v "$t" >/dev/null && { echo "$t"; return; }
  done
  echo "coverage-report: $1 not found (Debian: apt-get install llvm-$clang_major)" >&2
  exit 2
}
profdata_tool=$(llvm_tool llvm-profdata)
cov_tool=$(llvm_tool llvm-cov)
objdump_tool=$(llvm_tool llvm-objdump)

status=0
if [ "$run" = 1 ]; then
  rm -rf "$prof_dir"
  mkdir -p "$prof_dir"
  # %4m: the processes of one binary merge into a pool of four files as they exit, so the
  # ~700 test processes leave a few files a binary instead of one each.
  echo "coverage-report: running the tests (profiles in $prof_dir)" >&2
  LLVM_PROFILE_FILE="$prof_dir/%4m.profraw" \
    ctest --test-dir "$build" -j"${JOBS:-2}" --output-on-failure "${ctest_args[@]}" || status=$?
  shopt -s nullglob
  raws=("$prof_dir"/*.profraw)
  shopt -u nullglob
  if [ ${#raws[@]} -eq 0 ]; then
    echo "coverage-report: the tests wrote no profile" >&2
    exit 2
  fi
  "$profdata_tool" merge -sparse "${raws[@]}" -o "$profdata"
fi
if [ ! -f "$profdata" ]; then
  echo "coverage-report: no $profdata; run without --no-run first" >&2
  exit 2
fi

# Every instrumented binary and shared object of the build (llvm-cov reads each one's
# coverage mapping; the product's static libraries are inside them).
objects=()
while IFS= read -r f; do
  if "$objdump_tool" --section-headers "$f" 2>/dev/null | grep -q '__llvm_covmap'; then
    objects+=("$f")
  fi
done < <(find "$build" -type f \( -perm -u+x -o -name '*.so' \) ! -name '*.profraw' \
           ! -path '*/CMakeFiles/*' | sort)
if [ ${#objects[@]} -eq 0 ]; then
  echo "coverage-report: no instrumented binary in $build" >&2
  exit 2
fi
args=("${objects[0]}")
for o in "${objects[@]:1}"; do args+=(-object "$o"); done
ignore='(^/usr/|/tests/|/build/|/_deps/)'

if [ -n "$show" ]; then
  "$cov_tool" show "${args[@]}" -instr-profile="$profdata" -show-line-counts-or-regions \
    -ignore-filename-regex="$ignore" "$show"
else
  "$cov_tool" report "${args[@]}" -instr-profile="$profdata" -ignore-filename-regex="$ignore" \
    | sed "s|$root/||"
fi
exit "$status"
