#!/usr/bin/python3
"""Batch figures of the SGLang backend (hybridcache.sglang) beside memcpy, in one run.

Starts hybridcached (RocksDB L3 in a temporary directory), attaches a HybridCacheStorage to
a fake page_first_direct host pool group (tests/sglang_fakes.py: torch tensors laid out as
SGLang's), and times, per 128-page batch (SGLang's STORAGE_BATCH_SIZE):

  memcpy       torch copy of the batch's bytes between two host buffers (the floor)
  memcpy_x2    two threads each making that copy at once: near memcpy's time if the host
               copies two at a time, which ``part_bytes`` (copies beside the node's
               work) needs to pay; twice it or more if not
  set_v1/get_v1  HybridCacheStorage.batch_set_v1 / batch_get_v1 (host pool <-> arena <-> L3)
  set/get v0   batch_set / batch_get with flat page tensors
  store set/get  Store.set / Store.get of the same values already in the arena (no copy
               on the Python side: the node's part alone)

Usage (from the repository root, after the release build):
  HC_DAEMON=build/release/actors/daemon/hybridcached PYTHONPATH=build/release/python \\
      /usr/bin/python3 tools/python/bench_backend.py [--rounds 20] [--tokens-per-page 16]
"""

import argparse
import hashlib
import os
import statistics
import sys
import threading
import time

# The script's own folder holds the package's sources (without the compiled module): the
# package comes from PYTHONPATH, the fake host pools from tests/.
sys.path[0] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests")

import torch  # noqa: E402

import hybridcache  # noqa: E402
import sglang_fakes as sg  # noqa: E402
from node_process import NodeProcess  # noqa: E402

BATCH = 128


def keys_for(round_no, tag):
    return [hashlib.sha256(f"{tag}/{round_no}/{i}".encode()).hexdigest() for i in range(BATCH)]


def median_ms(samples):
    return statistics.median(samples) * 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="batches per figure (default 20)")
    ap.add_argument("--tokens-per-page", type=int, default=16, help="page size (default 16)")
    ap.add_argument("--layers", type=int, default=12, help="attention layers (default 12)")
    ap.add_argument("--head-dim", type=int, default=256, help="head dim, 1 KV head (default 256)")
    ap.add_argument("--part-bytes", type=int, default=None,
                    help="the backend's part_bytes option (default: the backend's default)")
    args = ap.parse_args()
    if "HC_DAEMON" not in os.environ:
        sys.exit("bench_backend: set HC_DAEMON to the hybridcached binary")

    page = args.tokens_per_page
    pages = 2 * BATCH
    kv = sg.MHATokenToKVPoolHost("page_first_direct", pages * page, page,
                                 layer_num=args.layers, head_num=1, head_dim=args.head_dim)
    mamba = sg.MambaPoolHost("page_first_direct", 4)
    group = sg.HostPoolGroup([sg.PoolEntry(sg.PoolName.KV, kv, is_primary_index_anchor=True),
                              sg.PoolEntry(sg.PoolName.MAMBA, mamba)])
    kv.kv_buffer.copy_(torch.randn(kv.kv_buffer.shape).to(kv.kv_buffer.dtype))
    batch_bytes = BATCH * kv.page_bytes()
    arena = max(64 << 20, 2 * batch_bytes)
    node = NodeProcess("--store-arena-bytes", str(arena))
    try:
        from hybridcache.sglang import HybridCacheStorage

        cfg = sg.HiCacheStorageConfig(is_page_first_layout=False, extra_config={
            "socket": node.socket, "timeout": 60, "interface_v1": 1,
            **({} if args.part_bytes is None else {"part_bytes": args.part_bytes})})
        be = HybridCacheStorage(cfg, {})
        be.register_mem_pool_host(group)
        be.register_mem_host_pool_v2(kv, sg.PoolName.KV)
        be.register_mem_host_pool_v2(mamba, sg.PoolName.MAMBA)
        src = torch.cat([torch.arange(p * page, (p + 1) * page) for p in range(BATCH)])
        dst = torch.cat([torch.arange(p * page, (p + 1) * page) for p in range(BATCH, 2 * BATCH)])
        flat_src = [kv.get_data_page(p * page) for p in range(BATCH)]
        a = torch.empty(batch_bytes, dtype=torch.uint8)
        b = torch.randint(0, 255, (batch_bytes,), dtype=torch.uint8)
        a2, b2 = torch.empty_like(a), b.clone()
        t = {k: [] for k in ("memcpy", "memcpy_x2", "set_v1", "get_v1", "set_v0", "get_v0",
                             "store_set", "store_get")}
        link = be._link()
        store = link.store
        entries = [(k, [(i * kv.page_bytes(), kv.page_bytes())])
                   for i, k in enumerate(keys_for(0, "direct"))]
        for r in range(args.rounds):
            t0 = time.perf_counter()
            a.copy_(b)
            t["memcpy"].append(time.perf_counter() - t0)
            other = threading.Thread(target=a2.copy_, args=(b2,))
            t0 = time.perf_counter()
            other.start()
            a.copy_(b)
            other.join()
            t["memcpy_x2"].append(time.perf_counter() - t0)
            k1 = keys_for(r, "v1")
            t0 = time.perf_counter()
            ok = be.batch_set_v1(k1, src)
            t["set_v1"].append(time.perf_counter() - t0)
            assert all(ok), "set_v1 failed"
            t0 = time.perf_counter()
            ok = be.batch_get_v1(k1, dst)
            t["get_v1"].append(time.perf_counter() - t0)
            assert all(ok), "get_v1 failed"
            k0 = keys_for(r, "v0")
            t0 = time.perf_counter()
            assert be.batch_set(k0, flat_src), "set v0 failed"
            t["set_v0"].append(time.perf_counter() - t0)
            targets = [kv.get_dummy_flat_data_page() for _ in range(BATCH)]
            t0 = time.perf_counter()
            got = be.batch_get(k0, targets)
            t["get_v0"].append(time.perf_counter() - t0)
            assert all(x is not None for x in got), "get v0 failed"
            direct = [(f"{k}/{r}", segs) for k, segs in entries]
            t0 = time.perf_counter()
            assert all(store.set(hybridcache.StorePool.KV_PAGE, direct))
            t["store_set"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            assert all(store.get(hybridcache.StorePool.KV_PAGE, direct))
            t["store_get"].append(time.perf_counter() - t0)
        assert torch.equal(kv.kv_buffer[:, :BATCH].view(torch.int16),
                           kv.kv_buffer[:, BATCH:].view(torch.int16)), "bytes differ"
        be.close()
    finally:
        node.stop()

    floor = median_ms(t["memcpy"])
    mib = batch_bytes / 2**20
    print(f"# 128-page batches: page {page} tokens x {args.layers} layers x 1 KV head x "
          f"{args.head_dim} dim fp16 = {kv.page_bytes() / 1024:.0f} KiB/page, "
          f"{mib:.1f} MiB/batch; median of {args.rounds}")
    print(f"{'call':<12}{'ms/batch':>10}{'GiB/s':>9}{'x memcpy':>10}")
    for name, xs in t.items():
        ms = median_ms(xs)
        moved = 2 * mib if name == "memcpy_x2" else mib  # two batches copied at once
        print(f"{name:<12}{ms:>10.2f}{moved / 1024 / (ms / 1e3):>9.2f}{ms / floor:>10.1f}")


if __name__ == "__main__":
    main()
