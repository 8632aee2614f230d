#!/usr/bin/env bash
# Dependency rules of architecture.md §6, checked on the sources:
#  - pure logic (actors/common, actors/radix_cache, actors/scheduler, actors/forward_stream
#    except *_actor.*) includes only the standard library and project headers;
#  - only *_actor.* and actors/node/ include CAF; only storage/rocksdb_* includes RocksDB;
#    only schema/ includes capnp; only gpu/cuda_* includes CUDA; only monitoring/ includes
#    prometheus-cpp.
set -u
root=${1:-.}
cd "$root" || exit 2
fail=0
report() { echo "layering: $1"; fail=1; }

pure_dirs="actors/common actors/radix_cache actors/scheduler actors/forward_stream actors/host_storage"
for d in $pure_dirs; do
  [ -d "$d" ] || continue
  for f in $(find "$d" -name '*.hpp' -o -name '*.cpp' | grep -v '_actor\.'); do
    while read -r inc; do
      # project headers ("actors/...") and standard headers (<vector>: no '/' or '.')
      if [[ ! "$inc" =~ ^\"actors/ && ! "$inc" =~ ^\<[a-z_0-9]+\>$ ]]; then
        report "$f includes $inc (pure code may include only the standard library)"
      fi
    done < <(grep -hoE '^\s*#\s*include\s*[<"][^>"]+[>"]' "$f" | sed -E 's/^\s*#\s*include\s*//')
  done
done

check_only() {  # pattern, allowed path regex, library name
  while read -r f; do
    [[ "$f" =~ $2 ]] || report "$f includes $3 (allowed only in $2)"
  done < <(grep -rlE "#\s*include\s*[<\"]($1)" --include='*.hpp' --include='*.cpp' --include='*.cu' --include='*.cuh' \
           actors schema storage gpu monitoring tools 2>/dev/null)
}
check_only 'caf/' '(_actor\.(hpp|cpp)$|^actors/node/)' CAF
check_only 'rocksdb/' '^storage/rocksdb_' RocksDB
check_only 'capnp/|kj/' '^schema/' "Cap'n Proto"
check_only 'cuda|cuda_runtime' '^gpu/cuda_' CUDA
check_only 'prometheus/' '^monitoring/' prometheus-cpp

[ $fail -eq 0 ] && echo "layering: all dependency rules hold"
exit $fail
