#!/usr/bin/env bash
# The layering check must fail on a wrong include: runs it on a scratch tree that breaks
# the matrix in each way it knows (a forbidden direction, a library reached through a
# project header, a non-standard include in a pure folder) and on the same tree repaired.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/actors/common" "$tmp/actors/node" "$tmp/storage"
echo '#include <vector>' >"$tmp/actors/common/ids.hpp"
printf '#include <caf/all.hpp>\n#include "actors/common/ids.hpp"\n' >"$tmp/actors/node/messages.hpp"
printf '#include "actors/node/messages.hpp"\n' >"$tmp/storage/store.hpp"
printf '#include <zlib.h>\n' >"$tmp/actors/common/log.hpp"
check() { bash "$here/../check_layering.sh" "$tmp" "$@"; }

out=$(check) && { echo "FAIL: the check passed a broken tree"; exit 1; }
for want in 'storage/store.hpp:1: includes "actors/node/messages.hpp" (storage -> actors/node' \
            'storage/store.hpp: reaches CAF <caf/all.hpp> (actors/node/messages.hpp)' \
            "actors/common/log.hpp:1: includes <zlib.h>, but 'actors/common' is pure"; do
  grep -qF "$want" <<<"$out" || { echo "FAIL: no '$want' in:"; echo "$out"; exit 1; }
done
graph=$(check --graph) || true
grep -qF "storage -> actors/node  (1)" <<<"$graph" || { echo "FAIL: graph: $graph"; exit 1; }

printf '#include "actors/common/ids.hpp"\n' >"$tmp/storage/store.hpp"
printf '#include <string>\n' >"$tmp/actors/common/log.hpp"
check >/dev/null || { echo "FAIL: the check refused a clean tree:"; check; exit 1; }
echo "layering checker: ok"
