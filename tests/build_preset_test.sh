#!/usr/bin/env bash
# scripts/lib/build_preset.sh (what scripts/test.sh and scripts/run.sh build with), run with
# a stand-in `cmake` that writes ninja's lines: a build that passes says where it stands at
# every tenth of its steps and returns 0; one whose compile fails returns non-zero and
# prints the FAILED block with the compiler's error, not only ninja's last line; a failed
# configure prints its log's end. Each keeps its whole output in build-<preset>.log.
#   tests/build_preset_test.sh SOURCE_DIR
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/run"
# The stand-in: `cmake --preset P` configures (P = badconf fails); `cmake --build --preset P
# -j N` makes 37 steps (P = badbuild fails at step 20, then writes ninja's closing lines).
cat > "$work/bin/cmake" <<'STANDIN'
#!/usr/bin/env bash
if [ "$1" = --preset ]; then
  echo "-- configuring $2"
  [ "$2" = badconf ] && { echo "CMake Error at CMakeLists.txt:9: CAF not found"; exit 1; }
  exit 0
fi
for i in $(seq 1 37); do
  echo "[$i/37] Building CXX object step$i.o"
  if [ "$3" = badbuild ] && [ "$i" = 20 ]; then
    echo "FAILED: step20.o"
    echo "step20.cpp:3:1: error: expected ';' before '}' token"
    for j in $(seq 21 30); do echo "[$j/37] Building CXX object step$j.o"; done
    echo "ninja: build stopped: subcommand failed."
    exit 1
  fi
done
STANDIN
chmod +x "$work/bin/cmake"

fail=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
run() {  # run PRESET: the helper as the scripts call it; its output in out-PRESET, status in rc
  (cd "$work/run" && PATH="$work/bin:$PATH" bash -c \
    "set -euo pipefail; . '$src/scripts/lib/build_preset.sh'; build_preset $1 2" \
    > "$work/out-$1" 2>&1)
  rc=$?
}

run good
check "a build that passes returns 0" test "$rc" -eq 0
check "it says where it stands at each tenth" \
  test "$(grep -cE '^ +[0-9]+% \[[0-9]+/37\]$' "$work/out-good")" -eq 10
check "its last progress line is the whole build" grep -q '100% \[37/37\]' "$work/out-good"
check "its whole output is in build-good.log" grep -q '^\[37/37\] Building' "$work/run/build-good.log"
check "the steps themselves are not printed" bash -c "! grep -q 'Building CXX' '$work/out-good'"

run badbuild
check "a build that fails returns non-zero" test "$rc" -ne 0
check "it prints the compiler's error" grep -q "step20.cpp:3:1: error: expected ';'" "$work/out-badbuild"
check "it names the failed step" grep -q '^FAILED: step20.o' "$work/out-badbuild"
check "it says it failed and where the log is" \
  grep -q 'build FAILED (whole output: build-badbuild.log)' "$work/out-badbuild"
check "it stopped before 100%" bash -c "! grep -q '100%' '$work/out-badbuild'"

run badconf
check "a configure that fails returns non-zero" test "$rc" -ne 0
check "it prints the configure's error" grep -q 'CAF not found' "$work/out-badconf"
check "it does not build" bash -c "! grep -q 'build, ' '$work/out-badconf'"

[ "$fail" -eq 0 ] || {
  for f in "$work"/out-*; do echo "--- $f"; cat "$f"; done
  exit 1
}
echo "build_preset: all checks passed"
