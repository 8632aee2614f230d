#!/usr/bin/env bash
# Every long option the command-line tools accept is documented in the README: the options
# are read from each tool's own --help (hybridcached, hcctl and each of its subcommands,
# hcsim), so a new flag without its README line fails here. The README as a whole is
# searched, not the tool's own section: an option two tools share is documented once.
#   tests/options_documented_test.sh README HYBRIDCACHED HCCTL HCSIM
set -u
readme=$1
hybridcached=$2
hcctl=$3
hcsim=$4
[ -r "$readme" ] || { echo "FAIL: cannot read $readme"; exit 1; }

missing=0
checked=0
# check TOOL_NAME HELP_TEXT: each --option of HELP_TEXT must appear in the README, as
# `--option` followed by a character that cannot continue an option name.
check() {
  local name=$1 help=$2 opt
  local opts
  opts=$(grep -oE -- '--[a-z0-9][a-z0-9-]*' <<< "$help" | grep -vx -- '--help' | sort -u)
  [ -n "$opts" ] || { echo "FAIL: $name --help lists no options"; missing=1; return; }
  for opt in $opts; do
    checked=$((checked + 1))
    grep -qE -- "${opt}([^a-z0-9-]|\$)" "$readme" || { echo "FAIL: $name $opt is not in the README"; missing=1; }
  done
}

help_of() {  # the tool's help text; a tool that cannot print it fails the test
  local out
  if ! out=$("$@" --help 2>&1); then echo "FAIL: $* --help exited non-zero: $out" >&2; return 1; fi
  printf '%s\n' "$out"
}

h=$(help_of "$hybridcached") || exit 1
check hybridcached "$h"
h=$(help_of "$hcsim") || exit 1
check hcsim "$h"
h=$(help_of "$hcctl") || exit 1
check hcctl "$h"
subcommands=$(awk '/^Subcommands:/{f=1; next} f && /^  [a-z]/{print $1}' <<< "$h")
[ -n "$subcommands" ] || { echo "FAIL: hcctl --help lists no subcommands"; exit 1; }
for sub in $subcommands; do
  grep -qE -- "hcctl( [^ ]+)* ${sub}([^a-z]|\$)" "$readme" || { echo "FAIL: hcctl $sub is not in the README"; missing=1; }
  h=$(help_of "$hcctl" "$sub") || exit 1
  check "hcctl $sub" "$h"
done
[ $missing -eq 0 ] || exit 1
echo "ok: $checked options of hybridcached, hcsim and hcctl ($(wc -w <<< "$subcommands") subcommands) are in the README"
