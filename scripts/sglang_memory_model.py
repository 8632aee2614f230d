#!/usr/bin/python3
"""A model of SGLang's index memory per cached token beside hybridcache's, on one trace.

Issue 19 compares the index's memory per cached token with SGLang's Python tree on the
same trace. SGLang itself cannot be installed on this machine (no package registry), so
this script *models* its tree — it is not SGLang's code. It builds, for the tree that
`hcctl replay --memory` leaves at the end of the trace (its node count, cached tokens and
nodes holding a slot), the objects SGLang's MambaRadixCache keeps per node, as its insert
and split build them (sgl-project/sglang python/sglang/srt/mem_cache/mamba_radix_cache.py
and radix_cache.py, 2026; the baseline's commit d72314808f keeps the same objects):

  * a TreeNode with its 21 attributes (children defaultdict, parent, key, value,
    mamba_value, mamba_host_value, two lock counts, last_access_time as a numpy float64,
    three counters, host_value, hash_value, six LRU links, id);
  * its key: a RadixKey (__slots__) over an exact-size array('q') slice (8 B a token);
  * its KV indices: an exact-size int64 tensor (`value.clone()`, 8 B a token);
  * for a node holding a slot, a one-element int64 tensor (`mamba_value`);
  * its entry in the parent's children dict under `key.child_key(page_size)` — the first
    token at page 1, a tuple of the first page's tokens (Python ints) at page > 1;
  * its entries in the two LRU lists' `cache` dicts (id -> node).

Tokens are spread evenly over the nodes, and the tree is conversation-shaped (chains of
four nodes under the root); each node's children dict and entry are modelled, so the
shape changes little. What it measures, around building the model after a gc: the heap in
use (glibc mallinfo2: bytes handed out by malloc, which torch's CPU allocator uses, plus
pymalloc's bytes in allocated blocks) and the process's RSS growth — each per cached token.
hybridcache's figures are `hcctl replay --memory`'s (heap in use, mallinfo2, the cache
alone). Compare in-use with in-use; the RSS growth adds the allocators' slack.

It also prints what issue 19's target (a tenth of SGLang's figure) asks beside the least
an index that answers exact matches must hold: the information in the tokens it caches.
The bundled traces draw each token uniformly from a vocabulary of V ids (trace-format.md,
generator splitmix64-v1), standing for a user's tokens, which no seed computes: log2(V)
bits a token (2.15 B at V = 151,936). An index that finds where a query first differs
from every cached sequence determines those sequences, so it holds at least that much;
where the tenth is below it, no exact index meets the target on that trace. Traces with
another or no generator get no floor (null).

  /usr/bin/python3 scripts/sglang_memory_model.py TRACE [--hcctl build/release/tools/hcctl/hcctl]
      [--json]

Needs Debian's python3-numpy and python3-torch (scripts/install-deps.sh installs both).
"""

import argparse
import array
import ctypes
import gc
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
from collections import defaultdict


class _MallInfo2(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                "usmblks", "fsmblks", "uordblks", "fordblks",
                                                "keepcost")]


def malloc_in_use(libc):
    m = libc.mallinfo2()
    return m.uordblks + m.hblkhd


def pymalloc_in_use():
    """Bytes in pymalloc's allocated blocks (sys._debugmallocstats writes them to fd 2)."""
    saved = os.dup(2)
    try:
        with tempfile.TemporaryFile(mode="w+") as t:
            sys.stderr.flush()
            os.dup2(t.fileno(), 2)
            try:
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
            t.seek(0)
            for line in t:
                if line.startswith("# bytes in allocated blocks"):
                    return int(line.split("=")[1].replace(",", ""))
    finally:
        os.close(saved)
    raise RuntimeError("sys._debugmallocstats printed no '# bytes in allocated blocks'")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def hybridcache_figures(hcctl, trace):
    out = subprocess.run([hcctl, "replay", "--memory", "--json", trace], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(f"hcctl replay --memory failed ({out.returncode}): "
                           f"{out.stderr.strip()}")
    return json.loads(out.stdout)


def exact_floor_bytes_per_token(trace):
    """log2(vocab) / 8 for a trace whose tokens come from splitmix64-v1, else None."""
    opener = gzip.open if trace.endswith(".gz") else open
    try:
        with opener(trace, "rt") as f:
            header = json.loads(f.readline())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # no floor; a trace hcctl cannot read has already been reported by it
    tokens = header.get("tokens") if isinstance(header, dict) else None
    if not isinstance(tokens, dict) or tokens.get("generator") != "splitmix64-v1":
        return None
    vocab = tokens.get("vocab")
    if not isinstance(vocab, int) or vocab < 2:
        return None
    return math.log2(vocab) / 8


def build_model(np, torch, page, nodes, slot_nodes, all_tokens, all_ids):
    """The model's objects for `nodes` nodes caching the tokens of `all_tokens` (an
    array('q')) with the KV ids `all_ids`; returns what keeps them alive (the root and the
    two LRU dicts)."""
    clock = [np.float64(1.0)]

    def last_access_time():  # SGLang's get_last_access_time(): a numpy float64 counter
        t = clock[0]
        clock[0] += 1.0
        return t

    class TreeNode:  # the attributes of SGLang's mamba_radix_cache.TreeNode
        counter = 0

        def __init__(self):
            self.children = defaultdict(TreeNode)
            self.parent = None
            self.key = None
            self.value = None
            self.mamba_value = None
            self.mamba_host_value = None
            self.full_lock_ref = 0
            self.mamba_lock_ref = 0
            self.last_access_time = last_access_time()
            self.hit_count = 0
            self.host_ref_counter = 0
            self.host_mamba_ref_counter = 0
            self.host_value = None
            self.hash_value = None
            self.prev = None
            self.next = None
            self.mamba_prev = None
            self.mamba_next = None
            self.host_mamba_prev = None
            self.host_mamba_next = None
            self.id = TreeNode.counter
            TreeNode.counter += 1

    class RadixKey:  # SGLang's RadixKey: __slots__, token_ids an array('q')
        __slots__ = ("token_ids", "extra_key", "is_bigram", "limit")

        def __init__(self, token_ids):
            self.token_ids = token_ids
            self.extra_key = None
            self.is_bigram = False
            self.limit = None

    tokens = len(all_tokens)
    per = tokens // nodes
    extra = tokens - per * nodes  # the first `extra` nodes take one token more
    root = TreeNode()
    full_cache, mamba_cache = {}, {}
    parent, at = root, 0
    for i in range(nodes):
        n_tokens = per + (1 if i < extra else 0)
        n = TreeNode()
        n.key = RadixKey(all_tokens[at:at + n_tokens])          # an exact-size slice
        n.value = torch.from_numpy(all_ids[at:at + n_tokens]).clone()
        if i < slot_nodes:
            n.mamba_value = torch.tensor(i, dtype=torch.int64).unsqueeze(-1).clone()
            mamba_cache[n.id] = n
        full_cache[n.id] = n
        n.parent = parent
        k = n.key.token_ids
        parent.children[k[0] if page == 1 else tuple(k[:page])] = n  # key.child_key()
        parent = n if i % 4 != 3 else root
        at += n_tokens
    return root, full_cache, mamba_cache


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="trace file (.jsonl or .jsonl.gz)")
    ap.add_argument("--hcctl", default="build/release/tools/hcctl/hcctl", help="hcctl binary")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    if not os.path.exists(args.trace):
        ap.error(f"{args.trace}: no such file")
    if not os.access(args.hcctl, os.X_OK):
        ap.error(f"{args.hcctl} is not an executable (build first: cmake --build --preset release)")
    try:
        import numpy as np
        import torch
    except ImportError as e:
        sys.exit(f"sglang_memory_model: {e} (install python3-numpy and python3-torch)")
    try:
        hc = hybridcache_figures(args.hcctl, args.trace)
    except (RuntimeError, json.JSONDecodeError) as e:
        sys.exit(f"sglang_memory_model: {e}")
    page, nodes, tokens = hc["page_size"], hc["tree_nodes"], hc["cached_tokens"]
    slot_nodes = hc.get("slot_nodes", nodes)
    if nodes == 0 or tokens == 0:
        sys.exit("sglang_memory_model: the trace leaves an empty tree")

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    # The token and id sources are built (and touched) before the first reading and kept
    # to the end, so that only the model's own objects are counted.
    rng = np.random.default_rng(2026)
    all_tokens = array.array("q", rng.integers(1000, 150000, size=tokens).astype(np.int64).tobytes())
    all_ids = np.arange(tokens, dtype=np.int64)
    # torch's first operations set up its own state (allocator, dispatch tables): not the
    # tree's, so before the first reading.
    warm = [torch.from_numpy(all_ids[:64]).clone(),
            torch.tensor(0, dtype=torch.int64).unsqueeze(-1).clone()]
    del warm
    gc.collect()
    before = (malloc_in_use(libc), pymalloc_in_use(), rss_bytes())
    keep = build_model(np, torch, page, nodes, slot_nodes, all_tokens, all_ids)
    gc.collect()
    after = (malloc_in_use(libc), pymalloc_in_use(), rss_bytes())
    in_use = (after[0] - before[0]) + (after[1] - before[1])
    rss = after[2] - before[2]
    model = {"in_use_bytes_per_cached_token": in_use / tokens,
             "rss_growth_bytes_per_cached_token": rss / tokens}
    ours = hc["growth_bytes_per_cached_token"]
    result = {"trace": args.trace, "page_size": page, "cached_tokens": tokens,
              "tree_nodes": nodes, "slot_nodes": slot_nodes,
              "hybridcache_growth_bytes_per_cached_token": ours,
              "hybridcache_total_bytes_per_cached_token": hc["total_bytes_per_cached_token"],
              "sglang_model": model,
              "ratio_in_use": ours / model["in_use_bytes_per_cached_token"],
              "target_bytes_per_cached_token": model["in_use_bytes_per_cached_token"] / 10,
              "exact_floor_bytes_per_cached_token": exact_floor_bytes_per_token(args.trace)}
    if args.json:
        print(json.dumps(result))
        return
    print(f"trace {args.trace}  (page {page}; {tokens} cached tokens in {nodes} nodes, "
          f"{slot_nodes} holding a slot)")
    print(f"hybridcache (hcctl replay --memory): {ours:.1f} B per cached token of growth, "
          f"{hc['total_bytes_per_cached_token']:.1f} in all")
    print(f"SGLang's tree, modelled: {model['in_use_bytes_per_cached_token']:.1f} B per cached "
          f"token in use, {model['rss_growth_bytes_per_cached_token']:.1f} of RSS growth")
    print(f"hybridcache / SGLang model (in use): {result['ratio_in_use']:.2f}")
    target = result["target_bytes_per_cached_token"]
    floor = result["exact_floor_bytes_per_cached_token"]
    if floor is None:
        print(f"a tenth of the model: {target:.2f} B per cached token (no token generator in "
              "the trace's header: no exact-index floor)")
    else:
        verdict = ("below it: no exact index reaches a tenth on this trace" if target < floor
                   else "above it")
        print(f"a tenth of the model: {target:.2f} B per cached token; the tokens' information, "
              f"which an exact index must hold: {floor:.2f} B per cached token ({verdict})")


if __name__ == "__main__":
    main()
