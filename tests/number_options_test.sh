#!/usr/bin/env bash
# Every numeric option of the command lines (read from each tool's own --help: hybridcached,
# hcsim, hcctl and each of its subcommands, so a new option is checked too) refuses, with a
# message naming the option and before doing anything, what CLI11 alone took
# (cli/number_checks.hpp):
# - a floating-point option (FLOAT): nan, -nan, inf, 1e999 — CLI::Range lets NaN through,
#   which became an undefined conversion of a NaN of seconds or a refresh that never waited;
#   and text that is no number ("abc", an empty value: the range check called them out of
#   range, or the empty one passed);
# - a whole-number option (UINT): -1 (strtoull wrapped it to 2^64 - 1), a number past
#   2^64 - 1 (read as 2^64 - 1: the "decide for me" value of --l3-min-free), and text that
#   is not a whole number: "abc", "1.5", "0x10" (C's hex, as "010" was C's octal: digits
#   are read in decimal now, tests/unit/number_checks_test.cpp) and an empty value;
# - a true / false option (BOOLEAN): "abc", "2", "-1" and an empty value (CLI11 read "" and
#   "-1" as false: --l3 "" turned the L3 store off).
# The daemon's config file goes through the same checks. Each refusal exits with status 2,
# a usage error (cli/command_line.hpp), as does an unknown option.
#   tests/number_options_test.sh HYBRIDCACHED HCCTL HCSIM
set -u
hybridcached=$1
hcctl=$2
hcsim=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Harmless surroundings should a value get through: a private socket, no metrics port, a
# scratch data directory, a node that is not there.
node_args=(--socket "$tmp/node.sock" --metrics off --data-dir "$tmp/data")
fail=0
checked=0

options_of_type() {  # options_of_type TYPE HELP: the --options whose help line names TYPE
  grep -oE -- "--[a-z0-9][a-z0-9-]* $1" <<< "$2" | cut -d' ' -f1 | sort -u
}

refused() {  # refused WHAT VALUE OPTION WHY -- COMMAND...: must exit 2 (usage) naming OPTION
  local what=$1 value=$2 opt=$3 why=$4
  shift 5
  local rc=0
  timeout 10 "$@" > "$tmp/out" 2>&1 || rc=$?
  checked=$((checked + 1))
  local said="$opt: Value $value $why"
  [ -z "$value" ] && said="$opt: Value $why"
  if [ "$rc" != 2 ] || ! grep -qF -- "$said" "$tmp/out"; then
    echo "FAIL: $what $opt $value: exit status $rc, $(head -c 300 "$tmp/out")"
    fail=1
  fi
}

after=()  # what follows the option on the command line (hcctl: its subcommand)
check_tool() {  # check_tool NAME HELP COMMAND...: each numeric option of HELP on COMMAND
  local name=$1 help=$2
  shift 2
  local floats wholes integers booleans opt
  floats=$(options_of_type FLOAT "$help")
  wholes=$(options_of_type UINT "$help")
  integers=$(options_of_type INT "$help")
  booleans=$(options_of_type BOOLEAN "$help")
  local cmd=("$@")
  refuse_all() {  # refuse_all OPT WHY VALUE...: each VALUE refused for OPT, saying WHY
    local opt=$1 why=$2 value
    shift 2
    for value in "$@"; do
      refused "$name" "$value" "$opt" "$why" -- "${cmd[@]}" "$opt" "$value" "${after[@]}"
    done
  }
  for opt in $floats; do
    refuse_all "$opt" "is not a finite number" nan -nan inf 1e999
    refuse_all "$opt" "is not a number" abc
    refuse_all "$opt" "is empty" ""
  done
  for opt in $wholes; do
    refuse_all "$opt" "is negative" -1
    refuse_all "$opt" "is too large" 18446744073709551616
  done
  for opt in $wholes $integers; do
    refuse_all "$opt" "is not a whole number" abc 1.5 0x10
    refuse_all "$opt" "is empty" ""
  done
  for opt in $booleans; do
    refuse_all "$opt" "is not: true or false" abc 2 -1
    refuse_all "$opt" "is empty: true or false" ""
  done
  echo "$name: $(wc -w <<< "$floats") floating-point, $(wc -w <<< "$wholes") unsigned," \
    "$(wc -w <<< "$integers") signed whole-number and $(wc -w <<< "$booleans") true / false option(s)"
}

h=$("$hybridcached" --help 2>&1) || { echo "FAIL: hybridcached --help"; exit 1; }
[ -n "$(options_of_type FLOAT "$h")" ] && [ -n "$(options_of_type UINT "$h")" ] ||
  { echo "FAIL: hybridcached --help names no FLOAT or no UINT option"; exit 1; }
check_tool hybridcached "$h" "$hybridcached" "${node_args[@]}"
h=$("$hcsim" --help 2>&1) || { echo "FAIL: hcsim --help"; exit 1; }
check_tool hcsim "$h" "$hcsim" --socket "$tmp/none.sock" --ops 1
h=$("$hcctl" --help 2>&1) || { echo "FAIL: hcctl --help"; exit 1; }
after=(ping)
check_tool hcctl "$h" "$hcctl" --socket "$tmp/none.sock"
for sub in $(awk '/^Subcommands:/{f=1; next} f && /^  [a-z]/{print $1}' <<< "$h"); do
  sh=$("$hcctl" "$sub" --help 2>&1) || { echo "FAIL: hcctl $sub --help"; exit 1; }
  after=()
  [ "$sub" = replay ] && after=("$tmp/no-such-trace.jsonl")  # its one positional
  check_tool "hcctl $sub" "$sh" "$hcctl" --socket "$tmp/none.sock" "$sub"
done

# The config file: the same checks, naming the option.
printf 'l3-flush-seconds = nan\n' > "$tmp/node.conf"
refused "hybridcached --config" nan --l3-flush-seconds "is not a finite number" -- \
  "$hybridcached" "${node_args[@]}" --config "$tmp/node.conf"
printf 'l3-capacity = -5\n' > "$tmp/node.conf"
refused "hybridcached --config" -5 --l3-capacity "is negative" -- \
  "$hybridcached" "${node_args[@]}" --config "$tmp/node.conf"

# An L3 store of no bytes is refused as a usage error, units or not (it failed only when
# the store opened, as "cannot open the L3 store").
for value in 0 0GB; do
  refused "hybridcached" 0 --l3-capacity "must be at least 1" -- \
    "$hybridcached" "${node_args[@]}" --l3-capacity "$value"
done

# An unknown option is a usage error too, and --help is not one.
for tool in "$hybridcached" "$hcsim" "$hcctl"; do
  rc=0
  "$tool" --no-such-option > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { echo "FAIL: $tool --no-such-option: exit status $rc, want 2"; fail=1; }
  rc=0
  "$tool" --help > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { echo "FAIL: $tool --help: exit status $rc"; fail=1; }
done

# A flag given twice is a usage error that says so (CLI11 said "At Most 1 required but
# received 2").
for cmdline in "$hybridcached --threads 2 --threads 3" "$hcsim --ops 1 --ops 2" \
  "$hcctl --timeout 1 --timeout 2 ping"; do
  rc=0
  # shellcheck disable=SC2086  # $cmdline is several words
  $cmdline > "$tmp/out" 2>&1 || rc=$?
  opt=$(grep -oE -- '--[a-z]+ [0-9]' <<< "$cmdline" | head -1 | cut -d' ' -f1)
  if [ "$rc" != 2 ] || ! grep -qx -- "$opt is given 2 times: give it once" "$tmp/out"; then
    echo "FAIL: $cmdline: exit status $rc, $(head -c 300 "$tmp/out")"
    fail=1
  fi
done

# Values in range still pass (here: hcctl gets as far as the node), with units too.
rc=0
"$hcctl" --socket "$tmp/none.sock" --timeout 0.5 ping > "$tmp/out" 2>&1 || rc=$?
grep -q "cannot reach the node" "$tmp/out" || { echo "FAIL: --timeout 0.5 refused: $(cat "$tmp/out")"; fail=1; }
"$hybridcached" --socket "" --metrics off --data-dir "$tmp/data" --l3-capacity 64GB \
  --max-sessions 18446744073709551615 --l3-flush-seconds 0.5 > "$tmp/out" 2>&1
grep -q "nothing to listen on" "$tmp/out" ||
  { echo "FAIL: options in range refused: $(cat "$tmp/out")"; fail=1; }

[ "$fail" = 0 ] || exit 1
echo "ok: $checked values refused"
