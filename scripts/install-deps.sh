#!/usr/bin/env bash
# Installs every Debian package hybridcache needs to build and test.
# Idempotent: packages already present are left as they are; `apt-get update`
# runs once per invocation, only when something is missing.
set -euo pipefail

# HC_DEPS=build: only what the release preset needs to build the node and hcctl
# (deploy/Dockerfile); the default installs everything the tests and tools use too.
build_packages=(
  build-essential cmake ninja-build pkg-config git python3
  # actors, RPC, L3 store, metrics
  libcaf-dev libcapnp-dev capnproto librocksdb-dev prometheus-cpp-dev
  # what the RocksDB and prometheus-cpp CMake configs look up themselves
  libgflags-dev libsnappy-dev liblz4-dev libzstd-dev libcivetweb-dev libcurl4-openssl-dev
  # standard building blocks (never hand-written)
  libssl-dev zlib1g-dev libbz2-dev libxxhash-dev nlohmann-json3-dev libcli11-dev libfmt-dev
  # KV events (events/): ZeroMQ and msgpack
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  # the test and benchmark frameworks (CMake finds them in every preset)
  libgtest-dev libgmock-dev libbenchmark-dev
)
test_packages=(
  # the Python package (tools/python; Debian's /usr/bin/python3)
  python3-dev python3-pybind11 python3-numpy
  # tensors for the SGLang backend's contract tests (fake host pools are torch tensors)
  python3-torch
  # the fuzz targets (preset fuzz: clang with libFuzzer and its sanitizer runtimes)
  clang libclang-rt-14-dev
  # deploy/ and monitoring/ checks: systemd-analyze, YAML, promtool and a real Prometheus
  systemd python3-yaml prometheus
  # the KV events subscriber of the events test (plain ZeroMQ + msgpack, no hybridcache code)
  python3-zmq python3-msgpack
)
packages=("${build_packages[@]}")
[ "${HC_DEPS:-all}" = build ] || packages+=("${test_packages[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
echo "install-deps: done"
