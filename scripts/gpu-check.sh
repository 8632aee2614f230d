#!/usr/bin/env bash
# The checks of the CUDA path that need a GPU (issue 18), in one run: the device probe (in
# this process and in a child, as hcsim forks its CUDA workers), the L1 pool contract
# suite on the CUDA pools, the cross-process IPC test, the toy model's kernels against the
# host run, the node's CUDA instances over RPC, hcsim --device cuda for every strategy with
# overlap (tests/hcsim_cuda_test.sh), the Python package's pools as CUDA tensors, and the
# GPU copy benchmarks beside the device's own floors.
#
# Usage, on the GPU machine, from the repository's root:
#   scripts/gpu-check.sh [BUNDLE.tar.xz]
# With a bundle (scripts/gpu-bundle.sh, packed with tar -cJf), the binaries and libraries
# come from it (a machine without this project's Debian packages); without one, from
# build/release. A test that skips fails the check here, except the ones that say a device
# is present (they run where none is). Logs and the benchmark's JSON go to $OUT (or
# ./gpu-check-out). HC_GPU_CHECK_OPS sets hcsim's operations per scenario (default 12000);
# HC_GPU_CHECK_BENCH=0 leaves the benchmarks out (about 80 s).
set -uo pipefail
root=$(pwd)
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
bundle=${1:-}
if [ -n "$bundle" ]; then
  dir=$(mktemp -d)
  tar -C "$dir" -xJf "$bundle" || { echo "gpu-check: cannot unpack $bundle"; exit 1; }
  export LD_LIBRARY_PATH=$dir/bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The build's compiled-in paths name /work/main (tests/data, the IPC peer).
  [ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }
  mkdir -p /work/main/build
  [ -e /work/main/build/release ] || ln -s "$dir/bundle/build/release" /work/main/build/release
  py=$dir/bundle/python
  for b in "$dir"/bundle/build/release/*/*/* "$dir"/bundle/build/release/tests/*; do
    [ -x "$b" ] && [ -f "$b" ] && ldd "$b" 2>&1 | grep -q 'not found' &&
      { echo "gpu-check: $b misses libraries:"; ldd "$b" | grep 'not found'; }
  done
else
  py=$root/build/release/python
fi
build=/work/main/build/release
[ -d "$build" ] || build=$root/build/release
status=0
step() {  # name, command...: runs it with its output in $out/NAME.log; a line per step
  local name=$1; shift
  local t0=$SECONDS rc=0
  timeout 300 bash -c '"$@"' step "$@" >"$out/$name.log" 2>&1 || rc=$?
  local skipped  # a skipped test, or a benchmark that could not run
  skipped=$(grep -E '^\[  SKIPPED \] [A-Za-z]|ERROR OCCURRED|\.\.\. skipped' "$out/$name.log" |
            grep -v -E 'WithoutAUsableDevice|WithoutDevice' | sed 's/ ([0-9]* ms)$//' | sort -u)
  if [ "$rc" != 0 ] || [ -n "$skipped" ]; then
    status=1
    printf '%-22s FAIL (exit %s, %ss)\n' "$name" "$rc" $((SECONDS - t0))
    [ -n "$skipped" ] && echo "$skipped"
    tail -25 "$out/$name.log"
  else
    printf '%-22s ok (%ss) %s\n' "$name" $((SECONDS - t0)) \
      "$(grep -E '^\[  PASSED  \]|^hcsim CUDA|^Ran |^OK' "$out/$name.log" | tr '\n' ' ')"
  fi
}

nvidia-smi -L 2>&1 | head -2
probe() {  # the probe, here and in a child (hcsim's way), must see the device
  "$build/tests/device_probe_test" || return 1
  "$build/tools/hcsim/hcsim" --device cuda --ops 0 --socket /nonexistent 2>&1 | grep -q 'no CUDA device' &&
    { echo "hcsim's probe found no device"; return 1; }
  return 0
}
export -f probe
export build
step probe probe
step contract "$build/tests/l1_pool_contract_test"
step ipc "$build/tests/cuda_ipc_test"
step toy_forward "$build/tests/cuda_toy_forward_test"
step node_rpc "$build/tests/node_rpc_test" --gtest_filter='NodeRpc.ACuda*:NodeRpc.OpenGives*'
hcsim_cuda() {
  local rc=0
  bash "$root/tests/hcsim_cuda_test.sh" "$build/actors/daemon/hybridcached" \
    "$build/tools/hcsim/hcsim" "${HC_GPU_CHECK_OPS:-12000}" || rc=$?
  [ "$rc" = 77 ] && { echo "hcsim_cuda skipped: no device"; return 1; }
  return "$rc"
}
export -f hcsim_cuda
export root build py
step hcsim_cuda hcsim_cuda
python_cuda() {
  (cd "$root/tools/python/tests" && PYTHONPATH=$py HC_DAEMON=$build/actors/daemon/hybridcached \
     HC_EXPECT_CUDA=1 python3 -m unittest -v \
     test_node.NodeTest.test_the_device_is_chosen_per_instance \
     test_node.NodeTest.test_the_pools_are_torch_tensors_without_copies)
}
export -f python_cuda
step python_cuda python_cuda
[ "${HC_GPU_CHECK_BENCH:-1}" = 0 ] || step bench "$build/tools/hcbench/hcbench" --benchmark_filter=Cuda --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/gpu_bench.json" \
  --benchmark_out_format=json
# compute-sanitizer's memcheck over the CUDA pools and the toy kernels (where it is there).
if command -v compute-sanitizer >/dev/null; then
  step memcheck_pools compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$build/tests/l1_pool_contract_test" --gtest_filter='*cuda*:CudaL1Pool.*'
  step memcheck_kernels compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    "$build/tests/cuda_toy_forward_test"
fi
[ -f "$out/bench.log" ] && grep -E '_median' "$out/bench.log"
exit "$status"
