#!/usr/bin/env bash
# The installed package: `cmake --install` into a scratch prefix, build a worker outside
# the tree with find_package(hybridcache) + hybridcache::client, start the installed
# hybridcached and run the worker against it.
#   package_consumer_test.sh BUILD_DIR SOURCE_DIR BUILD_TYPE "EXTRA_CXX_FLAGS"
set -euo pipefail
. "$(dirname "$0")/support/wait_for_node.sh"
build=$1 src=$2 build_type=$3 flags=${4:-}
tmp=$(mktemp -d)
pid=
cleanup() { if [ -n "$pid" ]; then stop_node "$pid"; fi; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/log" ] && { echo "--- node log:"; cat "$tmp/log"; }; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
[ -f "$tmp/prefix/lib/cmake/hybridcache/hybridcacheConfig.cmake" ] || fail "no package config installed"

# The package is the vocabulary, the wire code and the client: its headers are
# actors/common/*.hpp and schema/client.hpp, each self-contained inside the package, and
# its archives are those four libraries — nothing of the engine or the actors.
inc=$tmp/prefix/include/hybridcache
headers=$(cd "$inc" && find . -type f | sed 's|^\./||' | sort)
echo "installed headers:" $headers
for h in $headers; do
  [[ "$h" =~ ^actors/common/[a-z_0-9]+\.hpp$ || "$h" == schema/client.hpp ]] ||
    fail "installed header $h is not vocabulary or client"
  while read -r q; do
    [ -f "$inc/$q" ] || fail "installed $h includes \"$q\", which the package does not hold"
  done < <(grep -hoE '^\s*#\s*include\s*"[^"]+"' "$inc/$h" | sed -E 's/.*"(.*)"/\1/')
  echo "#include \"$h\"" | c++ -std=c++20 -fsyntax-only -I "$inc" -x c++ - ||
    fail "installed header $h does not compile on its own"
done
libs=$(cd "$tmp/prefix/lib" && ls *.a | sort | tr '\n' ' ')
[ "$libs" = "libhc_client.a libhc_common.a libhc_shm.a libhc_wire.a " ] ||
  fail "installed archives are '$libs', expected the client, vocabulary, shm and wire ones"
cmake -S "$src/tests/package/consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/configure.log" 2>&1 ||
  { cat "$tmp/configure.log"; fail "find_package(hybridcache) failed"; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "consumer build"; }

sock=$tmp/node.sock
"$tmp/prefix/bin/hybridcached" --socket "$sock" --metrics off --data-dir "$tmp/data" >"$tmp/log" 2>&1 &
pid=$!
wait_for_node "$pid" "$tmp/log"
"$tmp/consumer/consumer" "unix:$sock" || fail "the consumer failed against the node"
# The Python package, when built (not under sanitizers): importable from the install
# and talking to the installed node; and where it lies under the prefix is on Debian's
# python3 path for the prefixes an operator installs to (/usr/local, /usr), so an install
# there needs no PYTHONPATH.
native=$(find "$tmp/prefix" -name '_native*.so' -print -quit)
if [ -n "$native" ]; then
  pydir=$(dirname "$(dirname "$native")")
  rel=${pydir#"$tmp/prefix"/}
  for prefix in /usr/local /usr; do
    /usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$prefix/$rel" ||
      fail "the Python package installs to <prefix>/$rel, which /usr/bin/python3 does not read under $prefix"
  done
  PYTHONPATH=$pydir /usr/bin/python3 -c "
import hybridcache, hybridcache.sglang, os, sys
node = hybridcache.connect(socket=sys.argv[1])
assert node.ping().protocol_version == 2
with node.store('consumer') as s:
    s.arena[:3] = b'abc'
    assert s.set(hybridcache.StorePool.KV_PAGE, [('k', [(0, 3)])]) == [True]
d = os.path.dirname(hybridcache.__file__)
assert all(os.path.exists(os.path.join(d, f)) for f in ('_native.pyi', 'py.typed', 'sglang.py'))
print('python package: ok from', hybridcache.__file__)" "$sock" || fail "the installed Python package"
fi
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || fail "SIGTERM exit status $rc"
echo "package consumer: ok"
