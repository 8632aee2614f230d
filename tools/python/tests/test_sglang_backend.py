"""The SGLang HiCache backend (hybridcache.sglang.HybridCacheStorage) against a real
hybridcached, driven the way SGLang's HybridCacheController drives a dynamic backend at
d72314808 (reference/integration.md §0.3): attach (constructor, the HostPoolGroup, then each
pool through v2 after the threads started), backup per node (the Mamba state through
batch_set_v2 first, then the KV pages in 128-page batches), prefetch (batch_exists_v2 with
a placeholder Mamba transfer, the KV pages, then batch_get_v2 with the Mamba key moved to
the last hit page), for page_first and page_first_direct host pools, v0 and v1 KV calls; and
a model without SSM layers (SGLang's base HiCacheController: the MHA pool registered once,
the hit query through batch_exists) in those layouts and layer_first, SGLang's default."""

import hashlib
import importlib
import os
import random
import signal
import subprocess
import sys
import threading
import time
import unittest

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

from node_process import NodeProcess

if torch is not None:
    import sglang_fakes as sg

BATCH = 128  # SGLang's STORAGE_BATCH_SIZE
PAGE = 4     # tokens per page (1 KiB of KV with the fake pool's defaults)
ARENA = 64 * 1024
LAYOUTS = ("page_first", "page_first_direct")  # the hybrid stack's (the Mamba pool's) layouts
KV_ONLY_LAYOUTS = ("layer_first",) + LAYOUTS


def chain_keys(n, seed):
    """n page keys as SGLang makes them: a SHA-256 chain, 64 hex characters each."""
    rnd, prior, keys = random.Random(seed), b"", []
    for _ in range(n):
        h = hashlib.sha256(prior + bytes(rnd.getrandbits(8) for _ in range(4 * PAGE)))
        prior = h.digest()
        keys.append(h.hexdigest())
    return keys


def token_indices(pages):
    """host_indices of pages (token slots, page_size per page), as SGLang passes them."""
    return torch.cat([torch.arange(p * PAGE, (p + 1) * PAGE, dtype=torch.int64) for p in pages])


@unittest.skipIf(torch is None, "python3-torch is not installed (scripts/install-deps.sh "
                                "installs it): the fake host pools are torch tensors")
class SGLangBackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A 64 KiB arena per Store: a 128-page batch (128 KiB here) takes two trips.
        cls.node = NodeProcess("--store-arena-bytes", str(ARENA))

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()

    def setUp(self):
        # Run last of a test's clean-ups: the node releases a closed backend's Stores when it
        # learns of the closed connections, on its own time; the tests that count arenas
        # take their baseline at their start, which an earlier test's late release then
        # moved under them (3 != 4, under load).
        self.addCleanup(self.wait_for_arenas, 0)

    # ---- SGLang's side of the calls ---------------------------------------------------------

    def extra_config(self, v1=True, **options):
        """The user's --hicache-storage-backend-extra-config for this node."""
        extra = {"backend_name": "hybridcache", "module_path": "hybridcache.sglang",
                 "class_name": "HybridCacheStorage", "socket": self.node.socket, "timeout": 5}
        if v1:
            extra["interface_v1"] = 1
        extra.update(options)
        return extra

    def attach(self, layout="page_first_direct", v1=True, tp_rank=0, tp_size=1, pages=1024,
               slots=16, config=None, **options):
        """Controller attach order (§0.3): constructor, register_mem_pool_host(group),
        storage threads start, then register_mem_host_pool_v2 for kv and mamba. `config`:
        more HiCacheStorageConfig fields (is_mla_model, pp_rank, ...)."""
        extra = self.extra_config(v1, **options)
        cfg = sg.HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size,
                                      is_page_first_layout=layout == "page_first",
                                      extra_config=extra, **(config or {}))
        # What SGLang's dynamic factory does: import module_path, take class_name, and
        # construct it with (storage_config, kwargs) where kwargs is {}.
        cls = getattr(importlib.import_module(extra["module_path"]), extra["class_name"])
        backend = cls(cfg, {})
        group, kv, mamba = sg.hybrid_group(layout, pages, PAGE, slots)
        backend.register_mem_pool_host(group)
        backend.register_mem_host_pool_v2(kv, sg.PoolName.KV)
        backend.register_mem_host_pool_v2(mamba, sg.PoolName.MAMBA)
        self.addCleanup(backend.close)
        return backend, group, kv, mamba

    def attach_kv_only(self, layout, v1=True):
        """A model without SSM layers: SGLang's base HiCacheController registers its MHA host
        pool once (register_mem_pool_host) and nothing through v2."""
        extra = self.extra_config(v1)
        cfg = sg.HiCacheStorageConfig(is_page_first_layout=layout == "page_first",
                                      extra_config=extra)
        backend = importlib.import_module("hybridcache.sglang").HybridCacheStorage(cfg, {})
        kv = sg.MHATokenToKVPoolHost(layout, 1024 * PAGE, PAGE, layer_num=3)
        backend.register_mem_pool_host(kv)
        self.addCleanup(backend.close)
        return backend, kv

    @staticmethod
    def fill(kv, mamba, pages, slot, seed):
        g = torch.Generator().manual_seed(seed)
        for p in pages:
            page = kv.get_dummy_flat_data_page()
            page.copy_(torch.randn(page.shape, generator=g).to(page.dtype))
            kv.set_from_flat_data_page(p * PAGE, page)
        if slot is not None:
            mamba.temporal_buffer[slot].copy_(torch.randn(mamba.temporal_buffer[slot].shape,
                                                          generator=g))
            for c in mamba.conv_buffer:
                c[slot].copy_(torch.randn(c[slot].shape, generator=g).to(c.dtype))

    def store_arenas(self, node=None):
        """Store arenas the node (the class's by default) has in /dev/shm (one per open
        Store)."""
        prefix = "hybridcache-%d-" % (node or self.node).proc.pid  # then the node's nonce
        return sum(1 for n in os.listdir("/dev/shm") if n.startswith(prefix) and "-store-" in n)

    def wait_for_arenas(self, at_most):
        """Waits until the node has at most that many arenas (it learns of a closed
        connection on its own), 30 s at most (a hang guard); returns how many it has."""
        give_up = time.monotonic() + 30
        while self.store_arenas() > at_most and time.monotonic() < give_up:
            time.sleep(0.01)
        return self.store_arenas()

    @staticmethod
    def same_page(kv, a, b):
        return torch.equal(kv.get_data_page(a * PAGE).view(torch.int16),
                           kv.get_data_page(b * PAGE).view(torch.int16))

    @staticmethod
    def same_slot(mamba, a, b):
        return torch.equal(mamba.get_data_page(a), mamba.get_data_page(b))

    @staticmethod
    def same_slot_across(mamba_a, mamba_b, a, b):
        return torch.equal(mamba_a.get_data_page(a), mamba_b.get_data_page(b))

    def backup(self, backend, kv, keys, pages, slot, v1=True, state_key=None):
        """_page_backup of one node: Mamba first (batch_set_v2, under `state_key`, by default
        the last page's key), then KV in 128-page batches, stopping at the first failed
        batch. Returns (mamba ok, KV pages written)."""
        mamba_ok = None
        if slot is not None:
            r = backend.batch_set_v2([sg.PoolTransfer(
                name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                keys=[state_key or keys[-1]], host_indices=torch.tensor([slot]))], None)
            mamba_ok = r[sg.PoolName.MAMBA.value]
        written = 0
        for b in range(0, len(keys), BATCH):
            bk, bp = keys[b:b + BATCH], pages[b:b + BATCH]
            if v1:
                ok = all(backend.batch_set_v1(bk, token_indices(bp), None))
            else:
                ok = backend.batch_set(bk, [kv.get_data_page(p * PAGE, flat=True) for p in bp])
            if not ok:
                break
            written += len(bk)
        return mamba_ok, written

    def prefetch(self, backend, kv, keys, pages, slot, v1=True):
        """Hit query, then the KV reads, then (only if every KV page arrived) the Mamba
        state under the last hit page's key. Returns (hit, KV pages read, mamba ok)."""
        q = backend.batch_exists_v2(keys, [sg.PoolTransfer(
            name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
            keys=["__placeholder__"], host_indices=torch.tensor([slot]))], None)
        hit = q.kv_hit_pages
        read = self.read_pages(backend, kv, keys[:hit], pages[:hit], v1)
        mamba_ok = None
        if hit and read == hit:
            r = backend.batch_get_v2([sg.PoolTransfer(
                name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                keys=[keys[hit - 1]], host_indices=torch.tensor([slot]))], None)
            mamba_ok = r[sg.PoolName.MAMBA.value]
        return hit, read, mamba_ok

    @staticmethod
    def read_pages(backend, kv, keys, pages, v1=True):
        """The prefetch's KV reads: 128-page batches (v1 into the pool's pages, v0 into dummy
        flat pages copied in), stopping after the first short batch. Returns pages read."""
        read = 0
        for b in range(0, len(keys), BATCH):
            bk, bp = keys[b:b + BATCH], pages[b:b + BATCH]
            if v1:
                got = backend.batch_get_v1(bk, token_indices(bp), None)
                n = got.index(False) if False in got else len(got)
            else:
                got = backend.batch_get(bk, [kv.get_dummy_flat_data_page() for _ in bk])
                n = got.index(None) if None in got else len(got)
                for i in range(n):
                    kv.set_from_flat_data_page(bp[i] * PAGE, got[i])
            read += n
            if n < len(bk):
                break
        return read

    # ---- the contract ---------------------------------------------------------------------------

    def test_round_trips_byte_for_byte_in_both_layouts_v0_and_v1(self):
        for layout in LAYOUTS:
            for v1 in (True, False):
                with self.subTest(layout=layout, v1=v1):
                    backend, _, kv, mamba = self.attach(layout, v1)
                    n = 300  # batches of 128, 128, 44
                    keys = chain_keys(n, seed=hash((layout, v1)) & 0xffff)
                    src = list(range(n))
                    self.fill(kv, mamba, src, slot=1, seed=1)
                    self.assertEqual(self.backup(backend, kv, keys, src, 1, v1), ([True], n))
                    dst = list(range(400, 400 + n))
                    hit, read, mamba_ok = self.prefetch(backend, kv, keys, dst, 2, v1)
                    self.assertEqual((hit, read, mamba_ok), (n, n, [True]))
                    self.assertTrue(all(self.same_page(kv, a, b) for a, b in zip(src, dst)))
                    self.assertTrue(self.same_slot(mamba, 1, 2))
                    stats = backend.get_stats()
                    self.assertEqual((stats.pages_set, stats.pages_got), (n, n))
                    self.assertEqual((stats.states_set, stats.states_got), (1, 1))
                    self.assertEqual(sum(stats.backup_pgs), n)
                    self.assertEqual(backend.get_stats().backup_pgs, [], "get_stats empties lists")

    def test_batches_in_parts_round_trip_byte_for_byte(self):
        at_start = self.store_arenas()
        for v1 in (True, False):
            with self.subTest(v1=v1):
                probe, _, kv, _ = self.attach("page_first_direct", v1)
                part = 3 * kv.page_bytes() + 1  # three pages a part, the last part short
                probe.close()
                backend, _, kv, mamba = self.attach("page_first_direct", v1, part_bytes=part)
                n = 130  # batches of 128 and 2
                keys = chain_keys(n, seed=4321 + v1)
                src = list(range(n))
                self.fill(kv, mamba, src, slot=1, seed=5)
                self.assertEqual(self.backup(backend, kv, keys, src, 1, v1), ([True], n))
                dst = list(range(500, 500 + n))
                self.assertEqual(self.prefetch(backend, kv, keys, dst, 2, v1), (n, n, [True]))
                self.assertTrue(all(self.same_page(kv, a, b) for a, b in zip(src, dst)))
                self.assertTrue(self.same_slot(mamba, 1, 2))
                backend.close()
        self.wait_for_arenas(at_start)  # the next tests count arenas

    def test_a_model_without_ssm_layers_round_trips_in_every_layout(self):
        for layout in KV_ONLY_LAYOUTS:
            for v1 in (True, False):
                with self.subTest(layout=layout, v1=v1):
                    backend, kv = self.attach_kv_only(layout, v1)
                    n = 130  # batches of 128 and 2
                    keys = chain_keys(n, seed=hash((layout, v1, "kv")) & 0xffff)
                    src = list(range(n))
                    self.fill(kv, None, src, None, seed=9)
                    self.assertEqual(self.backup(backend, kv, keys, src, None, v1), (None, n))
                    self.assertEqual(backend.batch_exists(keys, None), n)
                    self.assertEqual(backend.batch_exists(keys + chain_keys(1, seed=1)), n)
                    dst = list(range(600, 600 + n))
                    self.assertEqual(self.read_pages(backend, kv, keys, dst, v1), n)
                    self.assertTrue(all(self.same_page(kv, a, b) for a, b in zip(src, dst)))
                    stats = backend.get_stats()
                    self.assertEqual((stats.pages_set, stats.pages_got), (n, n))
                    self.assertEqual((stats.states_set, stats.states_got), (0, 0))

    def test_v0_and_v1_share_values(self):
        """A value is the flat data page (all K, then all V) whichever call moved it: what
        v1 wrote from the pool's page pointers v0 reads as that page, and the other way."""
        for layout in KV_ONLY_LAYOUTS:
            with self.subTest(layout=layout):
                backend, kv = self.attach_kv_only(layout, v1=True)
                keys = chain_keys(10, seed=hash((layout, "share")) & 0xffff)
                self.fill(kv, None, range(10), None, seed=2)
                # v0 writes pages 0-4, v1 reads them into pages 10-14.
                self.assertEqual(self.backup(backend, kv, keys[:5], list(range(5)), None,
                                             v1=False)[1], 5)
                self.assertEqual(backend.batch_get_v1(keys[:5], token_indices(range(10, 15))),
                                 [True] * 5)
                self.assertTrue(all(self.same_page(kv, a, a + 10) for a in range(5)))
                # v1 writes pages 5-9, v0 reads them as flat pages.
                self.assertEqual(backend.batch_set_v1(keys[5:], token_indices(range(5, 10))),
                                 [True] * 5)
                got = backend.batch_get(keys[5:])  # into fresh dummy pages of the pool
                self.assertTrue(all(g is not None and torch.equal(
                    g.view(torch.int16), kv.get_data_page(p * PAGE).view(torch.int16))
                    for g, p in zip(got, range(5, 10))))

    def test_a_longer_prefetch_is_truncated_and_the_mamba_key_follows_the_last_hit_page(self):
        backend, _, kv, mamba = self.attach()
        keys = chain_keys(30, seed=3)
        # Node A: pages 0..9 with its state at page 9; node B: pages 10..19, state at 19.
        self.fill(kv, mamba, range(20), 1, seed=3)
        self.backup(backend, kv, keys[:10], list(range(10)), 1)
        self.fill(kv, mamba, [], 2, seed=4)
        self.backup(backend, kv, keys[10:20], list(range(10, 20)), 2)
        # Asking for 30 pages: 20 are there, and page 19 holds a state.
        hit, read, ok = self.prefetch(backend, kv, keys, list(range(100, 130)), 5)
        self.assertEqual((hit, read, ok), (20, 20, [True]))
        self.assertTrue(self.same_slot(mamba, 2, 5), "the state of the last hit page")
        # 15 pages: KV hits 15, but the deepest state is at page 9 -> clamped to 10.
        q = backend.batch_exists_v2(keys[:15], [sg.PoolTransfer(
            name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
            keys=["__placeholder__"], host_indices=torch.tensor([6]))])
        self.assertEqual(q.kv_hit_pages, 10)
        self.assertEqual(q.restorable_prefix_pages, [10])
        self.assertEqual(q.extra_pool_hit_pages, {"mamba": 10})
        # 5 pages: no state at or before page 4 -> nothing to restore.
        self.assertEqual(self.prefetch(backend, kv, keys[:5], list(range(200, 205)), 7),
                         (0, 0, None))
        # KV only (no sidecar transfer): the leading run, both forms.
        self.assertEqual(backend.batch_exists(keys), 20)
        self.assertEqual(backend.batch_exists_v2(keys, None).kv_hit_pages, 20)

    def test_partial_failures_are_positional(self):
        backend, _, kv, mamba = self.attach()
        keys = chain_keys(6, seed=5)
        self.fill(kv, mamba, range(6), None, seed=5)
        stored = [0, 2, 4]
        self.assertEqual(backend.batch_set_v1([keys[i] for i in stored], token_indices(stored)),
                         [True] * 3)
        self.assertEqual(backend.batch_get_v1(keys, token_indices(range(50, 56))),
                         [True, False, True, False, True, False])
        got = backend.batch_get(keys[:2], [kv.get_dummy_flat_data_page() for _ in range(2)])
        self.assertIsNotNone(got[0])
        self.assertIsNone(got[1])
        # As many targets as keys, or misses for all (before: an IndexError with more targets,
        # a short answer with fewer).
        for targets in (1, 3):
            with self.assertLogs("hybridcache.sglang", "ERROR"):
                self.assertEqual(backend.batch_get(keys[:2], [
                    kv.get_dummy_flat_data_page() for _ in range(targets)]), [None, None])
        # A pool this backend does not store, and a pool nobody registered: False, no raise.
        r = backend.batch_set_v2([
            sg.PoolTransfer(name=sg.PoolName.SWA, keys=[keys[0]], host_indices=torch.tensor([0])),
            sg.PoolTransfer(name=sg.PoolName.MAMBA, keys=[keys[0]], host_indices=torch.tensor([3]),
                            hit_policy=sg.PoolHitPolicy.TRAILING_PAGES)])
        self.assertEqual(r, {"swa": [False], "mamba": [True]})
        self.assertEqual(backend.batch_get_v2([sg.PoolTransfer(
            name=sg.PoolName.MAMBA, keys=[keys[1]], host_indices=torch.tensor([4]))]),
            {"mamba": [False]})
        self.assertEqual(backend.batch_exists_v2(keys, [sg.PoolTransfer(
            name=sg.PoolName.SWA, keys=["x"])]).kv_hit_pages, 0, "an unstored pool restores nothing")
        # Fewer host indices than the keys' pages: False for the batch and nothing stored
        # (before, one page's K and V pointers became two keys' values, each half a page).
        fresh = chain_keys(2, seed=55)
        with self.assertLogs("hybridcache.sglang", "ERROR") as logs:
            self.assertEqual(backend.batch_set_v1(fresh, token_indices([7])), [False, False])
        self.assertIn("host indices for 2 values", "\n".join(logs.output))
        self.assertEqual(backend.batch_exists(fresh), 0)
        # Indices the pool cannot serve (a non-tensor): False for the batch, no exception.
        self.assertEqual(backend.batch_set_v1(keys[:1], None), [False])
        self.assertEqual(backend.batch_get_v2([sg.PoolTransfer(
            name=sg.PoolName.MAMBA, keys=[keys[0]], host_indices=object())]), {"mamba": [False]})

    def test_single_key_calls_and_clear(self):
        backend, _, kv, mamba = self.attach("page_first", v1=False)
        key = chain_keys(1, seed=6)[0]
        self.fill(kv, mamba, [0], None, seed=6)
        self.assertFalse(backend.exists(key))
        self.assertIsNone(backend.get(key, kv.get_dummy_flat_data_page()))
        self.assertTrue(backend.set(key, kv.get_data_page(0)))
        self.assertTrue(backend.set(key, kv.get_data_page(0)), "set is idempotent")
        self.assertTrue(backend.exists(key))
        page = backend.get(key, kv.get_dummy_flat_data_page())
        self.assertTrue(torch.equal(page, kv.get_data_page(0)))
        other, _, okv, om = self.attach("page_first", v1=False, tp_rank=1, tp_size=2)
        self.fill(okv, om, [0], None, seed=7)
        self.assertTrue(other.set(key, okv.get_data_page(0)))
        backend.clear()
        self.assertFalse(backend.exists(key))
        self.assertTrue(other.exists(key), "clear erases its own identity only")

    def test_two_ranks_keep_their_own_shards(self):
        r0, _, kv0, m0 = self.attach(tp_rank=0, tp_size=2)
        r1, _, kv1, m1 = self.attach(tp_rank=1, tp_size=2)
        keys = chain_keys(8, seed=8)
        self.fill(kv0, m0, range(8), 1, seed=80)
        self.fill(kv1, m1, range(8), 1, seed=81)
        self.backup(r0, kv0, keys, list(range(8)), 1)
        self.assertEqual(r1.batch_exists(keys), 0, "rank 1 sees none of rank 0's values")
        self.backup(r1, kv1, keys, list(range(8)), 1)
        self.assertEqual(self.prefetch(r0, kv0, keys, list(range(20, 28)), 2), (8, 8, [True]))
        self.assertEqual(self.prefetch(r1, kv1, keys, list(range(20, 28)), 2), (8, 8, [True]))
        self.assertTrue(all(self.same_page(kv0, a, a + 20) for a in range(8)))
        self.assertTrue(all(self.same_page(kv1, a, a + 20) for a in range(8)))
        self.assertFalse(self.same_page(kv0, 20, 0) and self.same_page(kv1, 20, 0) and
                         torch.equal(kv0.get_data_page(0), kv1.get_data_page(0)))

    def test_an_mla_models_ranks_share_kv_pages_and_keep_their_own_states(self):
        """MLA: every TP rank holds the same KV pages (SGLang backs them up from rank 0 only)
        and its own shard of the Mamba state (every rank backs up its shard): each rank's hit
        query finds the shared pages and its own states, and restores its own shard."""
        ranks = [self.attach(tp_rank=r, tp_size=2, config={"is_mla_model": True})
                 for r in (0, 1)]
        n = 12
        keys = chain_keys(n, seed=12)
        src = list(range(n))
        for r, (backend, _, kv, mamba) in enumerate(ranks):
            self.fill(kv, mamba, src if r == 0 else [], 1, seed=120 + r)
            if r == 0:
                self.assertEqual(self.backup(backend, kv, keys, src, 1), ([True], n))
            else:  # backup_skip: KV from rank 0 only; the state from every rank
                self.assertEqual(self.backup(backend, kv, [], [], 1, state_key=keys[-1]),
                                 ([True], 0))
        self.assertFalse(self.same_slot_across(ranks[0][3], ranks[1][3], 1, 1),
                         "the two shards differ")
        dst = list(range(300, 300 + n))
        for r, (backend, _, kv, mamba) in enumerate(ranks):
            with self.subTest(rank=r):
                self.assertEqual(self.prefetch(backend, kv, keys, dst, 2), (n, n, [True]))
                self.assertTrue(self.same_slot(mamba, 1, 2), "its own shard")
                self.assertTrue(all(torch.equal(
                    ranks[0][2].get_data_page(a * PAGE).view(torch.int16),
                    kv.get_data_page(b * PAGE).view(torch.int16)) for a, b in zip(src, dst)))
        # A rank whose shard was never written restores nothing, though the KV is there.
        other, _, kv4, _ = self.attach(tp_rank=3, tp_size=4, config={"is_mla_model": True})
        self.assertEqual(other.batch_exists(keys), n)
        self.assertEqual(self.prefetch(other, kv4, keys, dst, 3), (0, 0, None))

    def test_pipeline_and_context_parallel_ranks_keep_their_own_values(self):
        """A pipeline stage holds other layers, a context-parallel rank other tokens' heads:
        neither may read another's pages under the same keys."""
        keys = chain_keys(3, seed=13)
        for field in ("pp", "attn_cp"):
            with self.subTest(field=field):
                mine, _, kv, mamba = self.attach(config={field + "_rank": 0, field + "_size": 2})
                peer, _, pkv, _ = self.attach(config={field + "_rank": 1, field + "_size": 2})
                self.fill(kv, mamba, range(3), 1, seed=13)
                self.assertEqual(self.backup(mine, kv, keys, [0, 1, 2], 1), ([True], 3))
                self.assertEqual(self.prefetch(mine, kv, keys, [10, 11, 12], 2), (3, 3, [True]))
                self.assertEqual(peer.batch_exists(keys), 0)
                self.assertEqual(self.prefetch(peer, pkv, keys, [10, 11, 12], 2), (0, 0, None))

    def test_the_rarer_call_forms(self):
        """Forms SGLang's hybrid path does not use but the API allows: pages by address and
        size, single-key calls by address, the pools registered through v2 before the group,
        KV named among the sidecar pools, and a typo in the extra config."""
        backend, _, kv, mamba = self.attach("page_first", v1=False)
        keys = chain_keys(4, seed=14)
        self.fill(kv, mamba, range(4), None, seed=14)
        pages = [kv.get_data_page(p * PAGE) for p in range(4)]  # contiguous copies
        self.assertTrue(backend.batch_set(keys[:2], None, [t.data_ptr() for t in pages[:2]],
                                          [t.numel() * t.element_size() for t in pages[:2]]))
        self.assertTrue(backend.set(keys[2], None, pages[2].data_ptr(),
                                    pages[2].numel() * pages[2].element_size()))
        got = backend.batch_get(keys[:3])
        self.assertTrue(all(torch.equal(g.view(torch.int16), p.view(torch.int16))
                            for g, p in zip(got, pages)))
        self.assertFalse(backend.batch_set(keys[3:], None), "neither values nor addresses")
        self.assertFalse(backend.batch_set(keys[3:], [pages[3]] * 2),
                         "a value per key")
        self.assertEqual(backend.batch_get(keys[:1], [[0] * 4]), [None], "not addressable")
        # KV among the sidecar pools is the hit itself, not a sidecar.
        q = backend.batch_exists_v2(keys, [sg.PoolTransfer(name=sg.PoolName.KV, keys=keys)])
        self.assertEqual((q.kv_hit_pages, q.extra_pool_hit_pages), (3, {}))

        # The v2 registrations before the group (any order): the KV pool is known at once.
        extra = {"socket": self.node.socket, "timeout": 5, "interface_v1": 1, "sokcet": "typo"}
        from hybridcache.sglang import HybridCacheStorage
        with self.assertLogs("hybridcache.sglang", "WARNING") as logs:
            early = HybridCacheStorage(sg.HiCacheStorageConfig(extra_config=extra), {})
        self.addCleanup(early.close)
        self.assertIn("sokcet", "\n".join(logs.output), "an unknown key is named")
        early.register_mem_host_pool_v2(kv, sg.PoolName.KV)
        self.assertEqual(early.batch_set_v1(keys[3:], token_indices([3])), [True])
        group, _, _ = sg.hybrid_group("page_first", 8, PAGE, 2)
        early.register_mem_pool_host(group)
        self.assertEqual(early.batch_get_v1(keys[3:], token_indices([9])), [True],
                         "the pool registered first stays the KV pool")
        self.assertTrue(self.same_page(kv, 3, 9))

    def test_a_backend_without_pools_answers_false_and_misses(self):
        from hybridcache.sglang import HybridCacheStorage
        backend = HybridCacheStorage(sg.HiCacheStorageConfig(
            extra_config={"socket": self.node.socket, "timeout": 5}), {})
        self.addCleanup(backend.close)
        keys = chain_keys(2, seed=15)
        with self.assertLogs("hybridcache.sglang", "ERROR"):
            self.assertEqual(backend.batch_set_v1(keys, token_indices([0, 1])), [False] * 2)
            self.assertEqual(backend.batch_get_v1(keys, token_indices([0, 1])), [False] * 2)
            self.assertEqual(backend.batch_get(keys), [None, None])
            self.assertEqual(backend.batch_set_v2([sg.PoolTransfer(
                name=sg.PoolName.MAMBA, keys=keys[:1], host_indices=torch.tensor([0]))]),
                {"mamba": [False]})
        self.assertEqual(backend.batch_exists(keys), 0)

    def test_three_threads_at_once(self):
        backend, _, kv, mamba = self.attach(pages=4096, slots=64)
        nodes = 12
        per = 40
        keys = chain_keys(nodes * per, seed=9)
        self.fill(kv, mamba, range(nodes * per), None, seed=9)
        for i in range(nodes):
            self.fill(kv, mamba, [], 1 + i, seed=100 + i)
        errors = []
        backed_up = threading.Semaphore(0)

        def backup_thread():
            for i in range(nodes):
                ks = keys[:(i + 1) * per]  # each node extends the previous one
                pages = list(range(i * per, (i + 1) * per))
                m, w = self.backup(backend, kv, ks[i * per:], pages, None)
                r = backend.batch_set_v2([sg.PoolTransfer(
                    name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                    keys=[ks[-1]], host_indices=torch.tensor([1 + i]))])
                if w != per or r != {"mamba": [True]}:
                    errors.append(("backup", i, w, r))
                backed_up.release()

        def prefetch_thread():
            seen = 0
            while seen < nodes:
                backed_up.acquire()
                seen += 1
                q = backend.batch_exists_v2(keys, [sg.PoolTransfer(
                    name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                    keys=["__placeholder__"], host_indices=torch.tensor([0]))])
                if q.kv_hit_pages < seen * per or q.kv_hit_pages % per:
                    errors.append(("exists", seen, q.kv_hit_pages))

        def io_thread():
            # Reads what is stored already into pages of its own, while the others run.
            for _ in range(30):
                hit = backend.batch_exists(keys)
                if hit == 0:
                    continue
                dst = list(range(2048, 2048 + hit))
                got = []
                for b in range(0, hit, BATCH):
                    got += backend.batch_get_v1(keys[b:min(b + BATCH, hit)],
                                                token_indices(dst[b:min(b + BATCH, hit)]))
                if not all(got) or not all(self.same_page(kv, a, 2048 + a) for a in range(hit)):
                    errors.append(("io", hit, got.count(False)))

        threads = [threading.Thread(target=f) for f in (backup_thread, prefetch_thread, io_thread)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        hit, read, ok = self.prefetch(backend, kv, keys, list(range(3000, 3000 + nodes * per)), 63)
        self.assertEqual((hit, read, ok), (nodes * per, nodes * per, [True]))
        self.assertTrue(self.same_slot(mamba, nodes, 63))

    def test_a_node_restart_fails_fast_then_recovers(self):
        backend, _, kv, mamba = self.attach(timeout=2, reconnect_interval=0.05)
        keys = chain_keys(10, seed=10)
        self.fill(kv, mamba, range(10), 1, seed=10)
        self.assertEqual(self.backup(backend, kv, keys, list(range(10)), 1), ([True], 10))
        self.node.halt()
        try:
            # Every call answers a miss / False instead of raising or hanging.
            self.assertEqual(backend.batch_exists(keys), 0)
            self.assertEqual(self.prefetch(backend, kv, keys, list(range(20, 30)), 2),
                             (0, 0, None))
            self.assertEqual(backend.batch_set_v1(keys[:2], token_indices([0, 1])), [False] * 2)
            self.assertFalse(backend.batch_set(keys[:1], [kv.get_data_page(0)]))
            self.assertEqual(backend.batch_get_v1(keys[:1], token_indices([20])), [False])
            self.assertEqual(backend.batch_get_v2([sg.PoolTransfer(
                name=sg.PoolName.MAMBA, keys=[keys[-1]], host_indices=torch.tensor([2]))]),
                {"mamba": [False]})
            self.assertGreater(backend.get_stats().failed_calls, 0)
            backend.clear()  # logged, not raised (SGLang's admin endpoint calls it)
        finally:
            self.node.start()
        # Back: the backend reconnects by itself; the values survived the clean restart.
        give_up = time.monotonic() + 60  # a hang guard: a loaded CI box restarts slowly
        while backend.batch_exists(keys) != 10 and time.monotonic() < give_up:
            threading.Event().wait(0.05)  # the reconnect interval
        self.assertEqual(self.prefetch(backend, kv, keys, list(range(20, 30)), 2), (10, 10, [True]))
        self.assertTrue(all(self.same_page(kv, a, a + 20) for a in range(10)))
        self.assertGreaterEqual(backend.get_stats().reconnects, 1)

    def test_a_forked_child_connects_again_and_reads_what_the_parent_wrote(self):
        # A child forked with the parent's links (this thread's) and with the backend's lock
        # held by another thread at the fork, as SGLang's backup thread may hold it: the child must neither use
        # the parent's connection (its calls all failed, and failed again after every
        # reconnect, as this thread's io_thread=False event loop is the parent's) nor wait
        # on the lock forever. It connects again, reads the parent's values byte for byte,
        # and the parent goes on. An exit code per failure; alarm: a hang guard.
        backend, _, kv, mamba = self.attach(reconnect_interval=0)
        keys = chain_keys(6, seed=21)
        self.fill(kv, mamba, range(6), 1, seed=21)
        self.assertEqual(self.backup(backend, kv, keys, list(range(6)), 1), ([True], 6))
        held, release = threading.Event(), threading.Event()

        def hold_the_lock():
            with backend._lock:
                held.set()
                release.wait()

        holder = threading.Thread(target=hold_the_lock)
        holder.start()
        held.wait()
        pid = os.fork()
        if pid == 0:
            code = 9
            try:
                signal.alarm(60)
                if backend.batch_exists(keys) != 6:
                    code = 1
                elif self.prefetch(backend, kv, keys, list(range(30, 36)), 2) != (6, 6, [True]):
                    code = 2
                elif not all(self.same_page(kv, a, a + 30) for a in range(6)):
                    code = 3
                elif not self.same_slot(mamba, 1, 2):
                    code = 4
                elif backend.get_stats().failed_calls != 0:
                    code = 5
                else:
                    backend.close()  # the child's own link; the parent's left alone
                    code = 0
            except BaseException:
                code = 8
            os._exit(code)
        release.set()
        holder.join()
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0,
                         "1/2: the child missed what the parent wrote, 3/4: read other bytes, "
                         "5: a call failed, 8: it raised, -14: it hung (the alarm)")
        self.assertEqual(backend.batch_exists(keys), 6, "the parent's link still works")
        self.assertEqual(backend.get_stats().failed_calls, 0)

    def test_a_node_without_l3_answers_misses_and_says_so_once(self):
        # hybridcached --l3 false refuses the Store when it is opened (a setting, not an
        # outage): the backend answers misses, warns once naming the setting, and makes no
        # arena (it used to reconnect, open an arena and log twice every retry interval).
        bare = NodeProcess("--l3", "false")
        self.addCleanup(bare.stop)
        backend, _, kv, mamba = self.attach(socket=bare.socket, reconnect_interval=0.01)
        keys = chain_keys(4, seed=40)
        self.fill(kv, mamba, range(4), 1, seed=40)
        with self.assertLogs("hybridcache.sglang", level="INFO") as logs:
            for _ in range(5):
                self.assertEqual(self.backup(backend, kv, keys, list(range(4)), 1), ([False], 0))
                self.assertEqual(self.prefetch(backend, kv, keys, list(range(8, 12)), 2),
                                 (0, 0, None))
                threading.Event().wait(0.02)  # past the retry interval: it tries again
        warnings = [r for r in logs.records if r.levelname == "WARNING"]
        self.assertEqual(len(warnings), 1, [r.getMessage() for r in logs.records])
        self.assertIn("--l3 false", warnings[0].getMessage())
        self.assertEqual(backend.get_stats().reconnects, 0)
        self.assertEqual(self.store_arenas(bare), 0)

    def test_close_releases_every_threads_store_at_once(self):
        # Each thread's link runs its calls on that thread (io_thread=False), so close() on
        # another one cannot close them there: it drops them, which shuts their sockets
        # down, and the node releases each thread's Store and arena while the threads live
        # on, idle (as SGLang's storage threads are at shutdown).
        backend, _, _, _ = self.attach()
        keys = chain_keys(2, seed=12)
        before = self.store_arenas()
        linked, finish = threading.Barrier(4), threading.Event()
        errors = []

        def user():
            try:
                backend.batch_exists(keys)  # this thread's link
            except Exception as e:  # reported below, in the test's thread
                errors.append(repr(e))
            linked.wait(30)
            finish.wait(120)  # alive, and no call again (well past the test's own wait)

        threads = [threading.Thread(target=user) for _ in range(3)]
        for t in threads:
            t.start()
        try:
            linked.wait(30)
            self.assertEqual(errors, [])
            self.assertEqual(self.store_arenas(), before + 3, "a Store (and arena) per thread")
            backend.close()
            self.assertEqual(self.wait_for_arenas(before), before,
                             "close() left the threads' Stores open")
            self.assertEqual(backend.batch_exists(keys), 0, "a closed backend answers misses")
        finally:
            finish.set()
            for t in threads:
                t.join()

    def test_a_thread_that_ends_releases_its_store(self):
        # A thread's link lives as long as the thread: when it ends, its Store and arena
        # are released on the node with the backend still open (threads come and go in a
        # pool; before, every ended thread's link stayed open until close()).
        backend, _, _, _ = self.attach()
        keys = chain_keys(2, seed=13)
        at_start = self.store_arenas()
        self.assertEqual(backend.batch_exists(keys), 0)  # the test thread's own link stays
        before = self.store_arenas()
        errors = []

        def user():
            try:
                backend.batch_exists(keys)  # this thread's link, its Store and arena
                linked = self.store_arenas() == before + 1
                errors.append(None if linked else "no arena while linked")
            except Exception as e:  # reported below, in the test's thread
                errors.append(repr(e))

        for _ in range(3):  # one after another, as a pool replaces its threads
            t = threading.Thread(target=user)
            t.start()
            t.join()
            self.assertEqual(self.wait_for_arenas(before), before,
                             "an ended thread's Store is still open")
        self.assertEqual(errors, [None, None, None])
        self.assertEqual(backend.batch_exists(keys), 0, "the backend serves on")
        backend.close()
        self.wait_for_arenas(at_start)  # the next test counts arenas too

    def test_a_batch_larger_than_the_arena_is_split_and_an_oversize_value_refused(self):
        backend, _, kv, mamba = self.attach()
        self.assertLess(ARENA, BATCH * kv.page_bytes(), "batches above take several trips")
        keys = chain_keys(2, seed=11)
        self.assertFalse(backend.batch_set(keys[:1], [torch.zeros(ARENA + 2, dtype=torch.uint8)]))
        self.assertTrue(backend.batch_set(keys[1:], [torch.ones(ARENA, dtype=torch.uint8)]))
        self.assertEqual(backend.batch_exists(keys[1:]), 1)

    def test_random_calls_agree_with_a_model_of_the_store(self):
        """Every call form SGLang makes (v0 / v1 pages, v2 Mamba states, batch_exists and
        batch_exists_v2, clear), drawn at random over a small universe of keys — repeats,
        keys never written, keys cleared — against a dict of what the store must hold. Values
        are content-addressed as SGLang's page hashes are: a key's bytes never change."""
        for layout in LAYOUTS:
            for seed in (1, 2):
                with self.subTest(layout=layout, seed=seed):
                    self.run_against_model(layout, seed, steps=120)

    def run_against_model(self, layout, seed, steps):
        backend, _, kv, mamba = self.attach(layout, pages=64, slots=8)
        backend.clear()  # the class's node is shared: start from nothing under this identity
        rnd = random.Random(seed)
        keys = chain_keys(40, seed=100 + seed)  # the universe; chain_keys(…, 200+) never written
        unknown = chain_keys(5, seed=200 + seed)
        page_numel = kv.get_dummy_flat_data_page().numel()
        slot_bytes = mamba.slot_bytes()

        def content(key, n):  # the value a key stands for, as int16 or bytes
            g = torch.Generator().manual_seed(int(key[:12], 16))
            return torch.randint(-32768, 32767, (n,), dtype=torch.int16, generator=g)

        def put_page(p, key):
            kv.set_from_flat_data_page(p * PAGE, content(key, page_numel).view(kv.dtype))

        def page_is(p, key):
            return torch.equal(kv.get_data_page(p * PAGE).view(torch.int16),
                               content(key, page_numel))

        def put_state(slot, data):
            at = 0
            for t in mamba._tensors(slot):
                n = t.numel() * t.element_size()
                t.view(-1).view(torch.uint8).copy_(data[at:at + n])
                at += n

        def state_of(key):
            return content(key, slot_bytes // 2).view(torch.uint8)

        sentinel = torch.full((page_numel,), 0x5A5A, dtype=torch.int16)
        pages_in_store, states_in_store = set(), set()

        def draw(n, pool):
            return rnd.sample(pool, min(n, len(pool)))

        def leading(q):
            n = 0
            while n < len(q) and q[n] in pages_in_store:
                n += 1
            return n

        for step in range(steps):
            op = rnd.choices(["set_v1", "set_v0", "get_v1", "get_v0", "exists", "exists_v2",
                              "state_set", "state_get", "clear"],
                             weights=[5, 3, 5, 3, 4, 4, 3, 3, 0.4])[0]
            where = "step %d (%s)" % (step, op)
            if op in ("set_v1", "set_v0"):
                batch = draw(rnd.randint(1, 20), keys)
                pages = rnd.sample(range(64), len(batch))
                for p, k in zip(pages, batch):
                    put_page(p, k)
                if op == "set_v1":
                    ok = backend.batch_set_v1(batch, token_indices(pages), None)
                    self.assertEqual(ok, [True] * len(batch), where)
                else:
                    self.assertTrue(backend.batch_set(
                        batch, [kv.get_data_page(p * PAGE, flat=True) for p in pages]), where)
                pages_in_store.update(batch)
            elif op in ("get_v1", "get_v0"):
                batch = draw(rnd.randint(1, 20), keys + unknown)
                pages = rnd.sample(range(64), len(batch))
                for p in pages:
                    kv.set_from_flat_data_page(p * PAGE, sentinel.view(kv.dtype))
                want = [k in pages_in_store for k in batch]
                if op == "get_v1":
                    got = backend.batch_get_v1(batch, token_indices(pages), None)
                else:
                    got = backend.batch_get(batch)
                    for p, t in zip(pages, got):
                        if t is not None:
                            kv.set_from_flat_data_page(p * PAGE, t)
                    got = [t is not None for t in got]
                self.assertEqual(got, want, where)
                for p, k, hit in zip(pages, batch, want):
                    if hit:
                        self.assertTrue(page_is(p, k), "%s: %s read other bytes" % (where, k))
                    else:
                        self.assertTrue(torch.equal(
                            kv.get_data_page(p * PAGE).view(torch.int16), sentinel),
                            "%s: a miss wrote its page" % where)
            elif op == "exists":
                q = draw(rnd.randint(0, 8), sorted(pages_in_store)) + draw(rnd.randint(0, 3), keys)
                self.assertEqual(backend.batch_exists(q), leading(q), where)
            elif op == "exists_v2":
                q = draw(rnd.randint(0, 8), sorted(pages_in_store)) + draw(rnd.randint(0, 3), keys)
                r = backend.batch_exists_v2(q, [sg.PoolTransfer(
                    name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                    keys=["__placeholder__"], host_indices=torch.tensor([0]))], None)
                restorable = [n for n in range(1, leading(q) + 1) if q[n - 1] in states_in_store]
                self.assertEqual(r.kv_hit_pages, restorable[-1] if restorable else 0, where)
                if hasattr(r, "restorable_prefix_pages"):
                    self.assertEqual(r.restorable_prefix_pages, restorable, where)
            elif op == "state_set":
                batch = draw(rnd.randint(1, 4), keys)
                slots = rnd.sample(range(8), len(batch))
                for s, k in zip(slots, batch):
                    put_state(s, state_of(k))
                r = backend.batch_set_v2([sg.PoolTransfer(
                    name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                    keys=batch, host_indices=torch.tensor(slots))], None)
                self.assertEqual(r[sg.PoolName.MAMBA.value], [True] * len(batch), where)
                states_in_store.update(batch)
            elif op == "state_get":
                batch = draw(rnd.randint(1, 4), keys + unknown)
                slots = rnd.sample(range(8), len(batch))
                for s in slots:
                    put_state(s, torch.zeros(slot_bytes, dtype=torch.uint8))
                r = backend.batch_get_v2([sg.PoolTransfer(
                    name=sg.PoolName.MAMBA, hit_policy=sg.PoolHitPolicy.TRAILING_PAGES,
                    keys=batch, host_indices=torch.tensor(slots))], None)
                want = [k in states_in_store for k in batch]
                self.assertEqual(r[sg.PoolName.MAMBA.value], want, where)
                for s, k, hit in zip(slots, batch, want):
                    expect = state_of(k) if hit else torch.zeros(slot_bytes, dtype=torch.uint8)
                    self.assertTrue(torch.equal(mamba.get_data_page(s), expect),
                                    "%s: slot %d of %s" % (where, s, k))
            else:
                backend.clear()
                pages_in_store.clear()
                states_in_store.clear()
        # The whole universe, once, at the end: nothing the model lost is still there.
        self.assertEqual([backend.exists(k) for k in keys + unknown],
                         [k in pages_in_store for k in keys + unknown])

    def test_the_module_does_not_import_torch(self):
        out = subprocess.run(
            [sys.executable, "-c",
             "import sys, hybridcache.sglang; print('torch' in sys.modules)"],
            capture_output=True, text=True, check=True, env=dict(os.environ))
        self.assertEqual(out.stdout.strip(), "False")

    def test_heads_split_for_other_tp_sizes_are_not_supported_and_say_so(self):
        from hybridcache.sglang import HybridCacheStorage
        with self.assertLogs("hybridcache.sglang", "WARNING") as logs:
            HybridCacheStorage(sg.HiCacheStorageConfig(
                tp_size=2, tp_lcm_size=4, should_split_heads=True, extra_config={}), {}).close()
        self.assertIn("tp_lcm_size", "\n".join(logs.output))

    def test_bad_options_are_refused_at_construction(self):
        from hybridcache.sglang import HybridCacheStorage
        with self.assertRaises(ValueError):
            HybridCacheStorage(sg.HiCacheStorageConfig(extra_config={"timeout": 0}), {})
        with self.assertRaises(ValueError):
            HybridCacheStorage(sg.HiCacheStorageConfig(extra_config={"tcp": "h:1"}), {})
        with self.assertRaises(ValueError):
            HybridCacheStorage(sg.HiCacheStorageConfig(extra_config={"part_bytes": -1}), {})
        # Python's json reads NaN and Infinity: neither is a number of seconds.
        for key, value in [("timeout", float("nan")), ("timeout", float("inf")),
                           ("reconnect_interval", float("nan")),
                           ("reconnect_interval", float("inf")), ("reconnect_interval", -1)]:
            with self.subTest(key=key, value=value), self.assertRaises(ValueError):
                HybridCacheStorage(sg.HiCacheStorageConfig(extra_config={key: value}), {})

    def test_options_of_the_wrong_kind_are_refused_naming_the_key(self):
        # What a hand-written JSON extra-config gets wrong: each would otherwise surface as
        # a TypeError without the key, or as misses logged as "node unavailable" on the
        # first call.
        from hybridcache.sglang import HybridCacheStorage
        for extra, key in [({"timeout": "abc"}, "timeout"), ({"timeout": [1]}, "timeout"),
                           ({"timeout": True}, "timeout"),
                           ({"reconnect_interval": "x"}, "reconnect_interval"),
                           ({"part_bytes": "4MB"}, "part_bytes"),
                           ({"part_bytes": 1.5}, "part_bytes"),
                           ({"part_bytes": True}, "part_bytes"),
                           ({"part_bytes": "²"}, "part_bytes"),
                           ({"socket": 5}, "socket"), ({"socket": ""}, "socket"),
                           ({"namespace": 5}, "namespace"),
                           ({"tcp": "h:1", "token_file": 3}, "token_file"),
                           ({"tcp": "", "token_file": "t"}, "tcp"),
                           ({"socket": "/s", "tcp": "h:1", "token_file": "t"}, "tcp"),
                           ({"token_file": "t"}, "token_file")]:
            with self.subTest(extra=extra), self.assertRaisesRegex(ValueError, key):
                HybridCacheStorage(sg.HiCacheStorageConfig(extra_config=extra), {})

    def test_option_values_that_mean_the_default_or_a_number_are_taken(self):
        from hybridcache.sglang import HybridCacheStorage
        for extra, attr, want in [({"timeout": None}, "_timeout", 2.0),
                                  ({"timeout": "0.5"}, "_timeout", 0.5),
                                  ({"reconnect_interval": 0}, "_retry", 0.0),
                                  ({"part_bytes": None}, "_part_bytes", 0),
                                  ({"part_bytes": "4194304"}, "_part_bytes", 4194304),
                                  ({"part_bytes": 4194304.0}, "_part_bytes", 4194304),
                                  ({"namespace": ""}, "_namespace", None),
                                  ({"socket": None}, "_socket", None)]:
            with self.subTest(extra=extra):
                backend = HybridCacheStorage(sg.HiCacheStorageConfig(extra_config=extra), {})
                try:
                    self.assertEqual(getattr(backend, attr), want)
                finally:
                    backend.close()


if __name__ == "__main__":
    unittest.main()
