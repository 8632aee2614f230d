#!/usr/bin/env bash
# Installs the dependencies, builds the release preset, checks the build on the bundled
# SGLang trace, and runs the node (hybridcached) in the foreground on its embedded
# defaults: Unix socket /tmp/hybridcache.sock, metrics on 127.0.0.1:9464, data in
# ./hybridcache-data. Extra arguments go to hybridcached. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release > build-release.log 2>&1 || { cat build-release.log; exit 1; }
cmake --build --preset release -j "$(nproc)" 2>&1 | tail -n 1
./build/release/tools/hcctl/hcctl replay --check --quiet tests/data/p64_ctx4k_c100.jsonl.gz
echo "starting hybridcached; in another shell: ./build/release/tools/hcctl/hcctl ping"
exec ./build/release/actors/daemon/hybridcached "$@"
