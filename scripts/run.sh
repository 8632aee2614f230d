#!/usr/bin/env bash
# Installs the dependencies, builds the release preset, and runs the node's main job on
# its embedded defaults. Until the RPC node lands (issue 4) that job is the in-process
# cache: replay the bundled SGLang trace through it, check every op against SGLang's own
# results, and print the timing summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release > build-release.log 2>&1 || { cat build-release.log; exit 1; }
cmake --build --preset release -j "$(nproc)" 2>&1 | tail -n 1
trace=${1:-tests/data/p64_ctx4k_c100.jsonl.gz}
./build/release/tools/hcctl/hcctl replay --check --quiet "$trace"
./build/release/tools/hcctl/hcctl replay --bench --repeat 3 "$trace"
