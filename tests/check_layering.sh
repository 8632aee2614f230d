#!/usr/bin/env bash
# The include directions of architecture.md §6, checked on the sources (transitively):
# tests/layering/directions.txt is the matrix, tests/layering/check_layering.py the check.
#   bash tests/check_layering.sh [ROOT]           # exit 1 and one line per violation
#   bash tests/check_layering.sh [ROOT] --graph   # the folder edges found, and cycle check
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=.
args=()
for a in "$@"; do
  case "$a" in --*) args+=("$a") ;; *) root=$a ;; esac
done
exec /usr/bin/python3 "$here/layering/check_layering.py" "$root" "${args[@]}"
