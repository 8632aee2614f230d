#!/usr/bin/env bash
# Builds the C++ libraries whose threads the node uses — CAF 0.17.6 and Cap'n Proto / kj
# 0.9.2, the versions Debian ships — with ThreadSanitizer, from Debian's source packages,
# into build/tsan-deps/prefix, which the `tsan` preset searches first. Debian's binaries
# are not instrumented, so TSan cannot see the synchronisation inside them (a message
# handed from one thread to an actor's worker through CAF's mailbox looks like a race).
#   scripts/build-tsan-deps.sh            # ~20 min on 2 cores; then:
#   cmake --preset tsan && cmake --build --preset tsan && ctest --preset tsan
# Needs: the deb-src lines of Debian bookworm (added to /etc/apt/sources.list.d/ if missing,
# as root), cmake, ninja, g++. Idempotent: a library already built is kept.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$root/build/tsan-deps
prefix=$work/prefix
jobs=${HC_JOBS:-$(nproc)}
mkdir -p "$work/src" "$prefix"
flags="-fsanitize=thread -g -O1"

sources() {
  cd "$work/src"
  if [ -d actor-framework-0.17.6 ] && [ -d capnproto-c++-0.9.2 ]; then return; fi
  if ! apt-get source --print-uris actor-framework >/dev/null 2>&1; then
    echo "== adding Debian's deb-src lines (/etc/apt/sources.list.d/hc-debian-src.sources)"
    cat > /etc/apt/sources.list.d/hc-debian-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    apt-get update -qq
  fi
  # The upstream tarballs only (Debian's one source fix, a missing #include <limits> in
  # CAF, is passed as -include limits).
  for pkg in actor-framework capnproto; do
    apt-get source --print-uris "$pkg" | grep -o "'[^']*orig.tar[^']*'" | tr -d "'" |
      xargs -r -n1 curl -fsSLO
  done
  tar xzf actor-framework_0.17.6.orig.tar.gz
  tar xzf capnproto_0.9.2.orig.tar.gz
}

build_caf() {
  [ -f "$prefix/lib/libcaf_core.so" ] && return
  echo "== CAF 0.17.6 with TSan"
  cmake -S "$work/src/actor-framework-0.17.6" -B "$work/caf" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_CXX_FLAGS="$flags -include limits" -DCMAKE_C_FLAGS="$flags" \
    -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes \
    -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_BENCHMARKS=yes -DCAF_NO_SUMMARY=yes \
    -DCAF_NO_COMPILER_CHECK=yes >"$work/caf.log" 2>&1
  cmake --build "$work/caf" -j "$jobs" >>"$work/caf.log" 2>&1 || { tail -30 "$work/caf.log"; exit 1; }
  cmake --install "$work/caf" >>"$work/caf.log" 2>&1
}

build_capnp() {
  [ -f "$prefix/lib/libkj.so" ] && "$prefix/bin/capnp" --version >/dev/null 2>&1 && return
  echo "== Cap'n Proto 0.9.2 with TSan"
  cmake -S "$work/src/capnproto-c++-0.9.2" -B "$work/capnp" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" -DBUILD_SHARED_LIBS=ON \
    -DCMAKE_INSTALL_RPATH="$prefix/lib" \
    -DBUILD_TESTING=OFF -DWITH_OPENSSL=OFF -DWITH_ZLIB=OFF >"$work/capnp.log" 2>&1
  cmake --build "$work/capnp" -j "$jobs" >>"$work/capnp.log" 2>&1 || { tail -30 "$work/capnp.log"; exit 1; }
  cmake --install "$work/capnp" >>"$work/capnp.log" 2>&1
}

sources
build_caf
build_capnp
echo "== done: $prefix (cmake --preset tsan finds it first)"
