#!/usr/bin/env bash
# Packs what scripts/gpu-check.sh runs — a CUDA release build's test binaries, the node,
# hcsim, hcbench, ctest's files for them and the shared libraries they load that are not
# glibc's — into one folder that runs on a GPU machine without this project's Debian
# packages (the lent H100/H200 machines of the device tool have CUDA, CMake and Python
# with torch, nothing else of ours). Binaries keep their paths under build/release so the
# CTestTestfile.cmake files and the compiled-in paths (the IPC peer, tests/data) hold once
# the folder is linked at the build's place there (gpu-check.sh does that).
#
# Usage: scripts/gpu-bundle.sh OUT_DIR [PYTHON_INCLUDE_DIR]
#   PYTHON_INCLUDE_DIR: also build the package's native module for the interpreter whose
#   headers are there (the GPU machine's Python may not be Debian's 3.11); e.g.
#   /root/.pyenv/versions/3.12.1/include/python3.12 for a Python 3.12 there.
# Needs build/release configured with HC_WITH_CUDA=ON and built.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/release
out=$(realpath -m "${1:?usage: gpu-bundle.sh OUT_DIR [PYTHON_INCLUDE_DIR]}")
py_include=${2:-}
grep -q '^HC_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt" ||
  { echo "gpu-bundle: $build is not a CUDA build (HC_WITH_CUDA=ON)" >&2; exit 1; }

bins=(tests/device_probe_test tests/l1_pool_contract_test tests/cuda_ipc_test tests/cuda_ipc_peer
      tests/cuda_toy_forward_test tests/node_rpc_test actors/daemon/hybridcached
      tools/hcsim/hcsim tools/hcbench/hcbench tools/hcctl/hcctl)
rm -rf "$out"
mkdir -p "$out/build/release" "$out/lib"
for b in "${bins[@]}"; do
  mkdir -p "$out/build/release/$(dirname "$b")"
  strip --strip-unneeded -o "$out/build/release/$b" "$build/$b"
done
# ctest's files, so the usual ctest -R lines run there.
(cd "$build" && find . -name CTestTestfile.cmake -print0 |
   xargs -0 -I{} sh -c 'mkdir -p "$1/$(dirname "{}")" && cp "{}" "$1/{}"' _ "$out/build/release")

# Every library the binaries load, but glibc's own and the C++ runtime (the machine's are
# at least as new: the binaries are built against Debian 12's glibc 2.36).
skip='^(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.'
for b in "${bins[@]}"; do ldd "$build/$b"; done | awk '/=> \//{print $1, $3}' | sort -u |
  while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -L "$path" "$out/lib/$name"
  done

# The Python package, its tests' helpers come from the work tree.
mkdir -p "$out/python/hybridcache"
cp "$build"/python/hybridcache/*.py "$build"/python/hybridcache/*.pyi "$out/python/hybridcache/"
if [ -n "$py_include" ]; then
  ver=$(basename "$py_include" | sed 's/^python//; s/\.//')
  obj=$(mktemp --suffix=.o)
  c++ -I"$root" -isystem "$py_include" -O2 -DNDEBUG -fPIC -fvisibility=hidden -std=c++20 \
    -c "$root/tools/python/native_module.cpp" -o "$obj"
  # The same libraries as the build's own module (its link line, with the object swapped).
  link=$(cd "$build" && ninja -t commands hc_python_native | tail -1 |
         sed 's/^: && //; s/ && :$//')
  link=${link//tools\/python\/CMakeFiles\/hc_python_native.dir\/native_module.cpp.o/$obj}
  link=${link//python\/hybridcache\/_native.cpython-311-x86_64-linux-gnu.so/$out/python/hybridcache/_native.cpython-$ver-x86_64-linux-gnu.so}
  (cd "$build" && eval "$link")
  rm -f "$obj"
else
  cp "$build"/python/hybridcache/_native.*.so "$out/python/hybridcache/"
fi
du -sh "$out"
