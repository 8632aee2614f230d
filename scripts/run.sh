#!/usr/bin/env bash
# Installs the dependencies, builds the release preset, checks the build on the bundled
# SGLang trace, and runs the node (hybridcached) in the foreground on its embedded
# defaults: Unix socket /tmp/hybridcache.sock, metrics on 127.0.0.1:9464, data in
# ./hybridcache-data. Extra arguments go to hybridcached. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
# shellcheck source=scripts/lib/build_preset.sh
. scripts/lib/build_preset.sh
build_preset release || exit 1
./build/release/tools/hcctl/hcctl replay --check --quiet tests/data/p64_ctx4k_c100.jsonl.gz
echo "starting hybridcached; in another shell: ./build/release/tools/hcctl/hcctl ping"
exec ./build/release/actors/daemon/hybridcached "$@"
