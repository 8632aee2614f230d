"""The Python package against a real hybridcached (started per test class on a private
socket): node calls, a session's steps with the v2 command kinds, typed errors, and
several Python threads sharing one connection."""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import hybridcache
from hybridcache import cmd, res
from node_process import (NodeProcess, can_mount_tmpfs, can_use_memory_cgroup,
                          can_use_pid_namespace)


def small_spec(model="py-model"):
    spec = hybridcache.InstanceSpec()
    spec.model_id = model
    spec.kv_tokens = 256
    spec.ssm_slots = 16
    spec.request_rows = 8
    spec.ssm_slot_bytes = 64
    spec.kv_bytes_per_token = 8
    return spec


class OwnNodeTest(unittest.TestCase):
    """A test class with a hybridcached of its own, started with NODE_OPTIONS (NodeProcess's
    keywords) — or skipped, saying why, when why_not() gives a reason."""

    NODE_OPTIONS = {}
    NODE_ARGS = ()  # hybridcached's own flags

    @classmethod
    def why_not(cls):
        return None

    @classmethod
    def setUpClass(cls):
        why = cls.why_not()
        if why:
            raise unittest.SkipTest(why)
        cls.node_process = NodeProcess(*cls.NODE_ARGS, **cls.NODE_OPTIONS)

    @classmethod
    def tearDownClass(cls):
        cls.node_process.stop()


class NodeTest(OwnNodeTest):

    def connect(self):
        return hybridcache.connect(socket=self.node_process.socket, timeout=30)

    def test_the_package_has_the_nodes_release(self):
        # The node built beside this package answers its ping with the same release.
        self.assertRegex(hybridcache.__version__, r"^\d+\.\d+\.\d+$")
        with self.connect() as node:
            self.assertEqual(hybridcache.__version__, node.ping().node_version)

    def test_ping_stats_inspect(self):
        with self.connect() as node:
            self.assertEqual(node.ping().protocol_version, 2)
            stats = node.stats()
            self.assertIn("sessions", stats)
            self.assertIn("instances", node.inspect())
            node.drain()

    def test_a_host_ssm_pool_of_its_own_size(self):
        spec = small_spec("py-host-ssm")
        spec.hicache_ratio = 2.0
        spec.hicache_ssm_bytes = 40 * spec.ssm_slot_bytes
        self.assertEqual(spec.hicache_ssm_bytes, 2560)
        with self.connect() as node:
            with node.open(spec) as s:
                self.assertTrue(s.step([cmd.Check(full=True)])[0].ok)
                host = next(i["tree"]["host"] for i in node.inspect()["instances"]
                            if i["fingerprint"].startswith("py-host-ssm|"))
                self.assertEqual(host["slot_capacity"], 41)  # 40 slots of the bytes, + 1
                self.assertEqual(host["kv_capacity"], 512)  # the ratio's: 2 x 256
            bad = small_spec("py-host-ssm-bad")
            bad.hicache_ssm_bytes = 2560  # no host tier to size
            with self.assertRaises(hybridcache.InvalidConfig) as caught:
                node.open(bad)
            self.assertIn("hicacheSsmBytes", str(caught.exception))

    def test_inspect_says_which_node_serves_and_with_what(self):
        with self.connect() as node:
            about = node.inspect()["node"]
            protocol = node.ping().protocol_version
        self.assertEqual(about["program"], "hybridcached")
        self.assertEqual(about["version"], hybridcache.__version__)
        self.assertEqual(about["protocol"], protocol)
        self.assertEqual(about["pid"], self.node_process.proc.pid)
        self.assertGreaterEqual(about["uptime_seconds"], 0)
        self.assertEqual(about["settings"]["socket"], self.node_process.socket)
        self.assertEqual(about["settings"]["metrics"], "off")
        self.assertIsNone(about["settings"]["tcp"])  # not set
        self.assertEqual(about["given"][:3], ["socket", "metrics", "data-dir"])

    def test_the_io_thread_has_a_name(self):
        def names():
            found = []
            for t in os.listdir("/proc/self/task"):
                try:  # a thread that ended since the listing (an earlier test's) is gone
                    with open(f"/proc/self/task/{t}/comm") as f:
                        found.append(f.read().strip())
                except FileNotFoundError:
                    pass
            return sorted(found)
        with self.connect() as node:
            node.ping()
            self.assertIn("hc-client-io", names())  # top -H, py-spy and gdb tell it apart

    def test_inspect_lists_the_device_pages_with_blocks(self):
        with self.connect() as node, node.open(small_spec("py-blocks")) as s:
            r = s.step([cmd.Create(req=1, tokens=list(range(1, 13))), cmd.Match(req=1),
                        cmd.AllocReq(req=1), cmd.AllocKv(req=1, to_end=True), cmd.Finish(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            trees = {i["fingerprint"]: i["tree"] for i in node.inspect(blocks=True)["instances"]}
            tree = next(t for f, t in trees.items() if "py-blocks" in f)
            self.assertEqual(len(tree["blocks"]), 12, "12 cached tokens at page 1")
            self.assertIsNone(tree["blocks"][0]["parent"])
            for prev, blk in zip(tree["blocks"], tree["blocks"][1:]):
                self.assertEqual(blk["parent"], prev["hash"], "one chain, parents first")
            self.assertNotIn("blocks", node.inspect()["instances"][0]["tree"])

    def test_a_request_runs_through_a_session(self):
        with self.connect() as node, node.open(small_spec()) as s:
            r = s.step([cmd.Create(req=1, tokens=list(range(1, 17))), cmd.Match(req=1),
                        cmd.Lock(req=1), cmd.AllocReq(req=1),
                        cmd.AllocKv(req=1, start=0, count=16), cmd.TakeOps(reqs=[1], batch=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            self.assertIsNone(r[0].body, "create reports nothing of its own")
            self.assertIsInstance(r[1].body, res.Match)
            self.assertEqual(r[1].body.prefix_len, 0)
            self.assertGreater(r[3].body.working, 0)
            self.assertEqual(len(r[4].body.indices), 16)
            self.assertEqual(r[5].body.clears, 1)
            self.assertGreaterEqual(s.begin_forward(1), 0)
            # A later begin before this end could only wait for its deadline (the
            # connection makes one call at a time): refused at once, naming the call.
            with self.assertRaisesRegex(hybridcache.InvalidArgument,
                                        r"call end_forward\(1\) first"):
                s.begin_forward(2)
            s.end_forward(1)
            fin = s.step([cmd.Finish(req=1)])[0]
            self.assertTrue(fin.ok, fin.error)
            self.assertIsInstance(fin.body, res.Finish)
            self.assertTrue(fin.body.inserted)
            look = s.step([cmd.Lookup(tokens=list(range(1, 17)))])[0].body
            self.assertEqual(look.prefix_len, 16)
            self.assertEqual(look.indices, r[4].body.indices)
            lengths = s.step([cmd.Lookup(tokens=list(range(1, 17)), without_indices=True)])[0].body
            self.assertEqual((lengths.prefix_len, lengths.kv_matched, lengths.node_slot),
                             (16, 16, look.node_slot))
            self.assertEqual(lengths.indices, [], "a router's lookup carries no ids")
            check = s.step([cmd.Check(full=True)])[0]
            self.assertTrue(check.body.sanity, check.body.sanity_detail)
            self.assertEqual(check.pools.full_protected, 0)
            self.assertTrue(s.pools.ssm_shm.startswith("/"))

    def test_a_pin_keeps_a_prefix_through_eviction_until_unpinned(self):
        """cmd.Pin holds a cached prompt's resumable prefix on the device while the cache is
        evicted, res.Pin says how much, the node's stats count it, and cmd.Unpin releases it."""
        prompt = list(range(1, 17))
        with self.connect() as node, node.open(small_spec("py-pins")) as s:
            r = s.step([cmd.Create(req=1, tokens=prompt), cmd.Match(req=1), cmd.AllocReq(req=1),
                        cmd.AllocKv(req=1, to_end=True), cmd.Finish(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            pinned = s.step([cmd.Pin(tokens=prompt, ttl_ms=60_000)])[0]
            self.assertTrue(pinned.ok, pinned.error)
            self.assertIsInstance(pinned.body, res.Pin)
            self.assertEqual((pinned.body.pinned_len, pinned.body.kv_matched,
                              pinned.body.loaded_tokens), (16, 16, 0))
            self.assertIn("pinned_len=16", repr(pinned.body))
            self.assertEqual(node.stats()["pins"], 1)
            self.assertEqual(node.stats()["pinned_tokens"], 16)
            s.step([cmd.Evict(tokens=1 << 20, slots=1 << 10)])
            look = s.step([cmd.Lookup(tokens=prompt, without_indices=True)])[0].body
            self.assertEqual(look.prefix_len, 16, "the pin held it through the eviction")
            gone = s.step([cmd.Unpin(pin=pinned.body.pin), cmd.Unpin(pin=pinned.body.pin)])
            self.assertTrue(gone[0].ok, gone[0].error)
            self.assertIsNone(gone[0].body)
            self.assertEqual(gone[1].code, "not_found")
            s.step([cmd.Evict(tokens=1 << 20, slots=1 << 10)])
            look = s.step([cmd.Lookup(tokens=prompt, without_indices=True)])[0].body
            self.assertEqual(look.prefix_len, 0, "unpinned, it was evicted")
            self.assertEqual(node.stats()["pins"], 0)

    def test_a_demote_takes_a_conversation_off_the_device(self):
        """cmd.Demote (an agent's conversation waits on a tool) evicts the cached prompt on an
        instance without a host tier, res.Demote says what went where, and a pinned prompt
        stays; a prompt given as an arena range works as for Create."""
        prompt = list(range(1, 17))
        with self.connect() as node, node.open(small_spec("py-demote")) as s:
            r = s.step([cmd.Create(req=1, tokens=prompt), cmd.Match(req=1), cmd.AllocReq(req=1),
                        cmd.AllocKv(req=1, to_end=True), cmd.Finish(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            pinned = s.step([cmd.Pin(tokens=prompt)])[0].body
            kept = s.step([cmd.Demote(prompt)])[0]
            self.assertTrue(kept.ok, kept.error)
            self.assertIsInstance(kept.body, res.Demote)
            self.assertEqual((kept.body.matched_tokens, kept.body.kept_tokens,
                              kept.body.evicted_tokens), (16, 16, 0))
            s.step([cmd.Unpin(pin=pinned.pin)])
            gone = s.step([cmd.Demote(tokens=prompt)])[0].body
            self.assertEqual((gone.evicted_tokens, gone.slots_freed, gone.demoted_tokens,
                              gone.deferred_tokens, gone.kept_tokens), (16, 1, 0, 0, 0))
            self.assertIn("evicted_tokens=16", repr(gone))
            look = s.step([cmd.Lookup(tokens=prompt, without_indices=True)])[0].body
            self.assertEqual(look.kv_matched, 0, "evicted")
            self.assertEqual(cmd.Demote(at=3, count=4).shared, (3, 4))
            with self.assertRaisesRegex(hybridcache.InvalidArgument,
                                        r"\(demote\): shared tokens .* no token arena"):
                s.step([cmd.Demote(at=0, count=4)])

    def test_a_numpy_prompt_is_cached_and_its_ids_read_as_numpy_arrays(self):
        """A prompt given as a NumPy array is cached as its list would be, and every result's
        `*_array` holds its list's ids as int32 (what torch.from_numpy takes as it is)."""
        import numpy
        prompt = numpy.arange(1, 33, dtype=numpy.int64) * 1000
        with self.connect() as node, node.open(small_spec("py-ids-array")) as s:
            r = s.step([cmd.Create(req=1, tokens=prompt), cmd.Match(req=1), cmd.AllocReq(req=1),
                        cmd.AllocKv(req=1, start=0, count=16), cmd.CacheUnfinished(req=1, fill_len=16),
                        cmd.AllocKv(req=1, start=16, count=16), cmd.Finish(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            self.assertEqual(r[4].body.prefix, r[3].body.indices)
            bodies = [(r[1].body, "indices"), (r[3].body, "indices"), (r[4].body, "prefix"),
                      (r[5].body, "indices")]
            look = s.step([cmd.Lookup(tokens=prompt.tolist())])[0].body
            self.assertEqual(look.prefix_len, 32, "the array's prompt was cached")
            self.assertEqual(look.indices, r[3].body.indices + r[5].body.indices)
            bodies.append((look, "indices"))
            for body, field in bodies:
                with self.subTest(result=type(body).__name__, field=field):
                    array = getattr(body, field + "_array")
                    self.assertIsInstance(array, numpy.ndarray)
                    self.assertEqual(array.dtype, numpy.int32)
                    self.assertEqual(array.tolist(), getattr(body, field))
                    array[:] = -1  # a copy: the result keeps its ids
                    self.assertNotIn(-1, getattr(body, field))
            self.assertEqual(len(look.indices_array), 32)
            self.assertNotIn("_array", repr(look))

    def test_the_pools_are_mapped_without_copies(self):
        with self.connect() as node, node.open(small_spec("py-pools")) as s:
            info = s.pools
            self.assertEqual(len(s.ssm_pool()), info.ssm_bytes)
            self.assertEqual(len(s.kv_pool()), info.kv_bytes)
            # A new request's working slot gets a clear, queued for forward 1 ...
            r = s.step([cmd.Create(req=2, tokens=[8, 9]), cmd.Match(req=2),
                        cmd.AllocReq(req=2), cmd.TakeOps(reqs=[2], batch=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            w = r[2].body.working
            self.assertEqual(r[3].body.clears, 1)
            # ... garbage written through the mapping (as a forward would) stays until the
            # node runs the clear at begin_forward: the bytes change under our views.
            s.ssm_slot(w)[:] = b"\xab" * info.ssm_slot_bytes
            arr = s.ssm_array()
            self.assertEqual(arr.shape[1], info.ssm_slot_bytes)
            self.assertTrue((arr[w] == 0xAB).all(), "NumPy sees the same bytes")
            s.begin_forward(1)
            self.assertEqual(bytes(s.ssm_slot(w)), bytes(info.ssm_slot_bytes))
            self.assertTrue((arr[w] == 0).all())
            s.end_forward(1)
            with self.assertRaises(hybridcache.InvalidArgument):
                s.ssm_slot(0)
            # The copying calls over the wire see the same bytes as the mapping.
            s.write_slot(w, b"\x5a" * info.ssm_slot_bytes)
            self.assertEqual(bytes(s.ssm_slot(w)), b"\x5a" * info.ssm_slot_bytes)
            self.assertEqual(s.read_slot(w), b"\x5a" * info.ssm_slot_bytes)
            page = bytes(range(info.kv_bytes_per_token))  # page size 1: one token
            s.write_kv_page(3, page)
            self.assertEqual(s.read_kv_page(3), page)
            self.assertEqual(bytes(s.kv_pool()[3 * len(page):4 * len(page)]), page)
            with self.assertRaises(hybridcache.InvalidArgument):
                s.write_slot(w, b"short")

    def test_shared_rows_hold_what_the_lists_would_carry(self):
        spec = small_spec("py-rows")
        spec.max_context_len = 32
        spec.shared_rows = True
        with self.connect() as node, node.open(spec) as s:
            r = s.step([cmd.Create(req=1, tokens=list(range(1, 17))), cmd.Match(req=1),
                        cmd.AllocReq(req=1), cmd.AllocKv(req=1, to_end=True)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            self.assertEqual(len(r[3].body.indices), 0, "the row holds them, not the result")
            rows = s.request_rows()
            self.assertEqual(rows.shape[1], 32)
            ids = rows[r[2].body.row, :16].tolist()
            self.assertEqual(len(set(ids)), 16)
            self.assertNotIn(0, ids)
            self.assertTrue(s.step([cmd.Finish(req=1)])[0].ok)
            look = s.step([cmd.Lookup(tokens=list(range(1, 17)))])[0].body
            self.assertEqual(look.indices, ids, "the tree holds the ids the row held")
        with self.connect() as node, node.open(small_spec("py-rows")) as s:
            with self.assertRaises(hybridcache.InvalidArgument):
                s.request_rows()

    def test_prompts_through_the_token_arena_are_cached_as_lists_would_be(self):
        spec = small_spec("py-arena")
        spec.shared_tokens = 64
        with self.connect() as node, node.open(spec) as s:
            arena = s.token_arena()
            self.assertEqual(arena.shape, (64,))
            arena[10:26] = range(1, 17)
            create = cmd.Create(req=1, at=10, count=16)
            self.assertEqual(create.shared, (10, 16))
            r = s.step([create, cmd.Match(req=1), cmd.AllocReq(req=1),
                        cmd.AllocKv(req=1, to_end=True)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            self.assertEqual(len(r[3].body.indices), 16)
            arena[:] = -1  # reusable once the step returned
            self.assertTrue(s.step([cmd.Finish(req=1)])[0].ok)
            look = s.step([cmd.Lookup(tokens=list(range(1, 17)))])[0].body
            self.assertEqual(look.indices, r[3].body.indices, "the arena's prompt was cached")
            arena[40:56] = range(1, 17)
            by_range = cmd.Lookup(at=40, count=16, without_indices=True)
            self.assertEqual((by_range.shared, by_range.tokens), ((40, 16), []))
            look = s.step([by_range])[0].body
            self.assertEqual((look.prefix_len, look.indices), (16, []))
            with self.assertRaises(hybridcache.InvalidArgument):
                s.step([cmd.Create(req=2, at=60, count=5)])
            with self.assertRaises(hybridcache.InvalidArgument):
                s.step([cmd.Lookup(at=60, count=5)])
        with self.assertRaises(ValueError):
            cmd.Create(req=1, tokens=[1], at=0, count=1)
        with self.assertRaises(ValueError):
            cmd.Append(req=1, at=0)
        with self.assertRaises(ValueError):
            cmd.Lookup(tokens=[1], at=0, count=1)
        with self.connect() as node, node.open(small_spec("py-arena")) as s:
            with self.assertRaises(hybridcache.InvalidArgument):
                s.token_arena()

    def test_store_existence_reads_a_sidecar_pool_under_suffixed_keys(self):
        from hybridcache import Sidecar, StorePool
        with self.connect() as node, node.store("py-suffix") as store:
            store.arena_array()[:64] = 7
            kv = [(k, [(0, 64)]) for k in ("a", "b")]
            self.assertEqual(store.set(StorePool.KV_PAGE, kv), [True, True])
            self.assertEqual(store.set(StorePool.SSM_STATE, [("b@r1", [(0, 16)])]), [True])
            mine = Sidecar(StorePool.SSM_STATE, trailing=True, n=1, key_suffix="@r1")
            self.assertEqual(mine.key_suffix, "@r1")
            self.assertEqual(tuple(store.exists(["a", "b"], [mine])), (2, [2]))
            self.assertEqual(store.exists(["a", "b"], [Sidecar()]).restorable_pages, [],
                             "no state under the bare keys")
            with self.assertRaises(hybridcache.InvalidArgument):
                store.exists(["a"], [Sidecar(key_suffix="\n")])

    def test_store_values_move_from_and_into_this_process_in_parts(self):
        import numpy as np
        page, count = 4096, 9
        host = np.arange(count * page, dtype=np.uint32).astype(np.uint8).reshape(count, page)
        host += np.arange(count, dtype=np.uint8)[:, None]  # each page its own bytes
        back = np.zeros_like(host)
        kv = hybridcache.StorePool.KV_PAGE
        with self.connect() as node, node.store("py-parts") as store:
            self.assertEqual(store.max_keys, 65536)  # the node's, as it said
            entries = [(f"page-{i}", [(i * page, page)]) for i in range(count)]
            for part in (2 * page, 0, hybridcache.DEFAULT_PART_BYTES):
                store.clear()
                back[:] = 0
                self.assertEqual(store.set_from(kv, entries, [host[i].ctypes.data for i in
                                                              range(count)], part), [True] * count)
                asked = list(entries)
                asked[3] = ("missing", asked[3][1])
                back[3] = 0x5A
                got = store.get_into(kv, asked, [back[i].ctypes.data for i in range(count)], part)
                self.assertEqual(got, [i != 3 for i in range(count)])
                for i in range(count):
                    if i == 3:
                        self.assertTrue((back[3] == 0x5A).all(), "a missing value is not written")
                    else:
                        self.assertTrue((back[i] == host[i]).all(), f"page {i}, part {part}")
            # Each message names its family once ("invalid_argument: invalid_argument: ..."
            # before: the checks' own text began with it too).
            once = r"^invalid_argument: (?!invalid_argument)"
            with self.assertRaisesRegex(hybridcache.InvalidArgument, once + "1 addresses for 9"):
                store.set_from(kv, entries, [host.ctypes.data])
            with self.assertRaisesRegex(hybridcache.InvalidArgument, once + "address 0 .* is null"):
                store.get_into(kv, entries[:1], [0])
            with self.assertRaisesRegex(hybridcache.InvalidArgument,
                                        once + "entry 0: two of its segments overlap"):
                store.set_from(kv, [("twice", [(0, page), (page // 2, page)])],
                               [host[0].ctypes.data, host[1].ctypes.data])
            with self.assertRaisesRegex(hybridcache.InvalidArgument,
                                        once + "entry 0: segment .* is outside the"):
                store.set_from(kv, [("beyond", [(store.arena_bytes - 1, page)])],
                               [host[0].ctypes.data])
            # Every value staged at arena offset 0, one part: each keeps its own bytes.
            at_zero = [(f"zero-{i}", [(0, page)]) for i in range(count)]
            self.assertEqual(store.set_from(kv, at_zero, [host[i].ctypes.data for i in
                                                          range(count)], 0), [True] * count)
            back[:] = 0
            self.assertEqual(store.get_into(kv, at_zero, [back[i].ctypes.data for i in
                                                          range(count)], 0), [True] * count)
            self.assertTrue((back == host).all(), "values sharing arena bytes kept their own")

    def test_a_failed_command_is_in_its_result(self):
        with self.connect() as node, node.open(small_spec()) as s:
            r = s.step([cmd.Match(req=99)])[0]
            self.assertFalse(r.ok)
            self.assertEqual(r.code, "not_found")
            self.assertIsNone(r.body)

    def test_errors_are_typed(self):
        with self.connect() as node:
            bad = small_spec()
            bad.kv_tokens = 0
            with self.assertRaises(hybridcache.InvalidConfig):
                node.open(bad)
            s = node.open(small_spec())
            s.close()
            self.assertTrue(s.closed)
            with self.assertRaises(hybridcache.NotFound):
                s.step([cmd.Check()])
            s_ok = node.open(small_spec())
            with self.assertRaises(hybridcache.InvalidArgument):
                s_ok.step([cmd.Check()] * 70000)  # above the node's step limit (65536)
            with self.assertRaises(TypeError):
                s_ok.step([object()])  # not a command
        with self.assertRaises(hybridcache.Unavailable):
            hybridcache.connect(socket=os.path.join(self.node_process.dir, "nobody.sock"))
        # An empty path is a mistake, not the default socket (where another node may listen).
        with self.assertRaisesRegex(hybridcache.InvalidArgument, "path must have 1 to 107"):
            hybridcache.connect(socket="")
        for bad in (0, -1, float("nan"), float("inf"), 1e300):  # 1e300 s: no int64 of ms
            with self.subTest(timeout=bad), self.assertRaises(hybridcache.InvalidArgument):
                hybridcache.connect(socket=self.node_process.socket, timeout=bad)
        self.assertTrue(issubclass(hybridcache.NotFound, hybridcache.Error))
        closed = self.connect()
        closed.close()
        with self.assertRaises(hybridcache.NotFound):
            closed.ping()

    def test_the_log_names_each_instance_that_opens_and_ends(self):
        # Operators read in the log which instances the node made, their pools, and why one
        # ended (its cached prefixes with it); before, instances came and went silently.
        first = small_spec("py-logged-0")
        with self.connect() as node:
            node.open(first).close()
            opened = re.search(r"info  instance ([0-9]+) \((py-logged-0\|tp0/1\|P1\|[^)]*)\) "
                               r"opened: 256 KV tokens and 16 SSM slots, 1 MiB of L1 pools in "
                               r"/dev/shm\n", self.node_process.log_text())
            self.assertIsNotNone(opened, self.node_process.log_text()[-2000:])
            # More idle instances than --max-idle-instances (4) keeps: the longest idle ends.
            for i in range(1, 6):
                node.open(small_spec(f"py-logged-{i}")).close()
        ended = re.search(r"info  instance " + opened.group(1) + " \\(" + re.escape(opened.group(2))
                          + r"\) ended: the longest idle of [0-9]+ instances without a session, "
                          r"more than --max-idle-instances \(4\) keeps: its cached prefixes "
                          r"are gone\n", self.node_process.log_text())
        self.assertIsNotNone(ended, self.node_process.log_text()[-2000:])

    def test_handles_say_what_they_are_connected_to(self):
        """A node, a session and a store print where they lead and whether they are closed,
        not <... object at 0x...>: what a REPL or a log line shows."""
        node = self.connect()
        self.assertEqual(repr(node), f"<hybridcache.Node unix:{self.node_process.socket}>")
        session = node.open(small_spec("py-repr"))
        self.assertEqual(repr(session), "<hybridcache.Session of 'py-repr'>")
        session.close()
        self.assertEqual(repr(session), "<hybridcache.Session of 'py-repr', closed>")
        store = node.store("py-repr-store")
        self.assertRegex(repr(store), r"^<hybridcache.Store 'py-repr-store', arena of \d+ bytes>$")
        store.close()
        self.assertTrue(repr(store).endswith(", closed>"), repr(store))
        node.close()
        self.assertTrue(repr(node).endswith(" (closed)>"), repr(node))

    def test_the_socket_may_be_a_path_object(self):
        # pathlib is how Python code builds paths (pytest's tmp_path): connect() used to
        # raise "can only concatenate str (not "PosixPath") to str" for one.
        import pathlib
        for path in (pathlib.Path(self.node_process.socket), os.fsencode(self.node_process.socket)):
            with self.subTest(path=type(path).__name__), \
                    hybridcache.connect(socket=path, timeout=30) as node:
                self.assertEqual(node.ping().protocol_version, 2)

    def test_arguments_of_the_wrong_kind_are_type_errors_that_name_them(self):
        sock = self.node_process.socket
        for kwargs, name in (({"socket": 5}, "socket"), ({"socket": ["/tmp/x"]}, "socket"),
                             ({"socket": sock, "timeout": None}, "timeout"),
                             ({"socket": sock, "timeout": "30"}, "timeout"),
                             ({"tcp": ("127.0.0.1", 1), "token_file": "t"}, "tcp")):
            with self.subTest(**{k: repr(v) for k, v in kwargs.items()}), \
                    self.assertRaisesRegex(TypeError, "^" + name + " must be"):
                hybridcache.connect(**kwargs)
        from hybridcache import StorePool
        with self.connect() as node, node.open(small_spec("py-kinds")) as s, \
                node.store("py-kinds") as store:
            r = s.step([cmd.Create(req=1, tokens=[1, 2]), cmd.Match(req=1), cmd.AllocReq(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            self.assertRegex(repr(r[1]), r"^CommandResult\(ok=True, code='ok', error='', "
                             r"pools=PoolState\(kv_avail=256, .*body=res\.Match\(prefix_len=0, ")
            w = r[2].body.working
            s.write_slot(w, b"\x5a" * 64)
            # An int is not a length of zeros (bytes(64) would be), nor a str its encoding:
            # the slot keeps its bytes.
            for data in (64, "Z" * 64, None):
                with self.subTest(data=repr(data)[:10]), \
                        self.assertRaisesRegex(TypeError, "^data must be bytes-like"):
                    s.write_slot(w, data)
            self.assertEqual(s.read_slot(w), b"\x5a" * 64)
            s.write_slot(w, bytearray(b"\x33" * 64))  # any bytes-like object
            s.write_slot(w, memoryview(b"\x33" * 64))
            self.assertEqual(s.read_slot(w), b"\x33" * 64)
            store.arena_array()[:4] = 1
            self.assertEqual(store.set(StorePool.KV_PAGE, [("ab", [(0, 4)])]), [True])
            self.assertEqual(store.exists(["ab"]).kv_hit_pages, 1)
            # One key is not a list of keys: a str was read as keys "a", "b" (0 hits).
            with self.assertRaisesRegex(TypeError, r"wrap it in a list, \[key\]"):
                store.exists("ab")
            with self.assertRaisesRegex(TypeError, "wrap a single entry in a list"):
                store.get(StorePool.KV_PAGE, ("ab", [(0, 4)]))
            with self.assertRaisesRegex(TypeError, r"^entries must be .*\(offset, length\)"):
                store.set(StorePool.KV_PAGE, [("ab", 4)])

    def test_specs_past_the_limits_are_refused_and_the_node_goes_on(self):
        # KV and slot ids are Int32, and several spec fields UInt32 on the wire: a spec past
        # them is refused with the field's name (it once took the whole node down, or
        # wrapped the ids), and the node keeps serving.
        too_big = [("kv_tokens", 2**31, "kvTokens"), ("kv_tokens", 2**62, "kvTokens"),
                   ("ssm_slots", 2**31, "ssmSlots"), ("ssm_slots", 2**40, "ssmSlots"),
                   ("request_rows", 2**33, "requestRows"), ("chunk_size", 2**32, "chunkSize"),
                   ("slots_per_request", 17, "slotsPerRequest"),
                   # Printed by hcctl inspect: a terminal escape reached the operator's screen.
                   ("model_id", "m\x1b[2J", "modelId"), ("namespace", "a\nb", "namespace"),
                   ("model_id", "m" * 257, "modelId"),
                   # The default: two models of one shape without an id shared their KV.
                   ("model_id", "", "modelId is empty")]
        with self.connect() as node:
            for field, value, name in too_big:
                spec = small_spec("py-too-big")
                setattr(spec, field, value)
                with self.assertRaises(hybridcache.InvalidConfig, msg=field) as caught:
                    node.open(spec)
                self.assertIn(name, str(caught.exception))
            self.assertEqual(node.ping().protocol_version, 2)
            with node.open(small_spec("py-too-big")) as s:
                self.assertTrue(s.step([cmd.Check(full=True)])[0].ok)
        self.assertTrue(self.node_process.alive())

    def test_the_device_is_chosen_per_instance(self):
        spec = small_spec("py-device")
        self.assertEqual(spec.device, "cpu")
        with self.assertRaises(ValueError):
            spec.device = "gpu"
        with self.connect() as node:
            with node.open(spec) as s:
                pools = s.pools
                self.assertEqual(pools.device, "cpu")
                self.assertEqual(pools.kv_ipc_handle, b"")
                self.assertEqual(pools.ready_event_ipc_handle, b"")
            spec.device = "cuda"
            try:
                s = node.open(spec)
            except hybridcache.InvalidConfig as e:  # no usable device here: the reason
                self.assertIn("cuda", str(e))
                if os.environ.get("HC_EXPECT_CUDA"):  # scripts/gpu-check.sh: a device is there
                    self.fail(f"HC_EXPECT_CUDA is set but the node refused a cuda instance: {e}")
                return
            with s:
                pools = s.pools
                self.assertEqual(pools.device, "cuda")
                self.assertEqual(len(pools.ssm_ipc_handle), 64)
                self.assertEqual(len(pools.done_event_ipc_handle), 64)
                self.assertEqual(pools.ssm_shm, "")
                self.check_the_pool_tensors(s, cuda=True)

    def check_the_pool_tensors(self, s, cuda):
        """The pool tensors share memory with the node's pools, both ways."""
        try:
            import torch
        except ImportError as e:
            self.skipTest(f"torch is not importable: {e}")
        info = s.pools
        ssm, kv = s.ssm_tensor(), s.kv_tensor()
        self.assertEqual(ssm.dtype, torch.uint8)
        self.assertEqual(tuple(ssm.shape), (info.ssm_bytes // info.ssm_slot_bytes,
                                            info.ssm_slot_bytes))
        self.assertEqual(tuple(kv.shape), (info.kv_bytes // info.kv_bytes_per_token,
                                           info.kv_bytes_per_token))
        self.assertEqual(ssm.is_cuda, cuda)
        r = s.step([cmd.Create(req=7, tokens=[8, 9]), cmd.Match(req=7), cmd.AllocReq(req=7)])
        self.assertTrue(all(x.ok for x in r), [x.error for x in r])
        w = r[2].body.working
        s.write_slot(w, b"\x5a" * info.ssm_slot_bytes)  # the node writes: the tensor sees it
        self.assertTrue((ssm[w].cpu() == 0x5A).all())
        ssm[w] = 0xC3  # the tensor writes: the node reads it back
        if cuda:
            torch.cuda.synchronize()
        self.assertEqual(s.read_slot(w), b"\xc3" * info.ssm_slot_bytes)
        page = bytes(range(info.kv_bytes_per_token))
        s.write_kv_page(3, page)
        self.assertEqual(bytes(kv[3].cpu().numpy()), page)
        s.step([cmd.Abort(req=7)])

    def test_the_pools_are_torch_tensors_without_copies(self):
        with self.connect() as node, node.open(small_spec("py-tensors")) as s:
            self.check_the_pool_tensors(s, cuda=False)

    def test_commands_compare_by_value(self):
        self.assertEqual(cmd.AllocKv(req=1, start=2, count=3), cmd.AllocKv(req=1, start=2, count=3))
        self.assertNotEqual(cmd.Evict(tokens=1), cmd.Evict(slots=1))
        with self.assertRaises(TypeError):
            cmd.AllocKv(req=1)  # start and count have no default

    def test_threads_share_one_connection(self):
        with self.connect() as node:
            sessions = [node.open(small_spec("py-threads")) for _ in range(4)]
            errors = []

            def run(k, s):
                try:
                    for i in range(25):
                        h = 1000 * (k + 1) + i
                        r = s.step([cmd.Create(req=h, tokens=[k, i, 7]), cmd.Match(req=h),
                                    cmd.Abort(req=h)])
                        if not all(x.ok for x in r):
                            errors.append([x.error for x in r])
                        node.ping()
                except Exception as e:  # reported below, in the test's thread
                    errors.append(repr(e))

            threads = [threading.Thread(target=run, args=(k, s)) for k, s in enumerate(sessions)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual(errors, [])
            for s in sessions:
                s.close()
            self.assertEqual(node.inspect()["sessions"], 0)

    def test_a_forked_child_connects_again_and_the_parent_goes_on(self):
        for io_thread in (True, False):  # calls on the connection's thread or the caller's
            with self.subTest(io_thread=io_thread):
                self.check_a_forked_child(io_thread)

    def connect_and_step(self, io_thread):
        with hybridcache.connect(socket=self.node_process.socket, timeout=30,
                                 io_thread=io_thread) as fresh:
            with fresh.open(small_spec("py-fork")) as mine:
                return mine.step([cmd.Check()])[0].ok

    def check_a_forked_child(self, io_thread):
        # A child has the connection's memory but not its I/O thread, and shares its socket
        # with the parent: its calls once waited out the timeout, and releasing the objects
        # there aborted the child (a join of a thread it does not have).
        # Timeouts as hang guards only (a loaded 2-vCPU CI box can take seconds to open):
        # the child must fail at once, not after them.
        node = hybridcache.connect(socket=self.node_process.socket, timeout=30,
                                   io_thread=io_thread)
        s = node.open(small_spec("py-fork"))
        pid = os.fork()
        if pid == 0:  # the child: an exit code per failure, nothing raised past os._exit
            code = 0
            try:
                try:
                    node.ping()
                    code = 1
                except hybridcache.Unavailable as e:
                    code = 0 if "fork" in str(e) else 2
                if code == 0:
                    try:
                        s.step([cmd.Check()])
                        code = 3
                    except hybridcache.Unavailable:
                        pass
                if code == 0 and not io_thread:
                    # This thread's io_thread=False connections share one event loop, the
                    # parent's (its epoll instance is the parent's too): a new one here
                    # is refused, saying so; a new thread's is its own.
                    try:
                        self.connect_and_step(io_thread=False)
                        code = 6
                    except hybridcache.Unavailable as e:
                        code = 0 if "fork" in str(e) else 7
                    if code == 0:
                        result = []
                        t = threading.Thread(
                            target=lambda: result.append(self.connect_and_step(False)))
                        t.start()
                        t.join()
                        code = 0 if result == [True] else 8
                if code == 0 and not self.connect_and_step(io_thread=True):
                    code = 4
                del s, node  # their objects are left alone here, without waiting
            except BaseException:
                code = 5
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0,
                         "1/3: the child's call went out on the parent's socket, 2: its error "
                         "does not say why, 4/8: a new connection failed there, 5: it raised, "
                         "6/7: a new io_thread=False connection on the forking thread was not "
                         "refused / its error does not say why")
        self.assertEqual(node.ping().protocol_version, 2)
        self.assertTrue(s.step([cmd.Check(full=True)])[0].body.sanity)
        s.close()
        node.close()


class MuteSocketTest(unittest.TestCase):
    """A socket that accepts and never answers (a hung node, another program on the path)."""

    def test_a_timeout_below_a_millisecond_still_gives_up(self):
        # It is rounded up to 1 ms: truncated to 0 ms, it meant no limit and the connect hung.
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mute.sock")
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(path)
            listener.listen(8)
            held = []
            threading.Thread(target=lambda: held.append(listener.accept()[0]),
                             daemon=True).start()
            outcome = []

            def connect():
                try:
                    hybridcache.connect(socket=path, timeout=0.0004).close()
                    outcome.append("connected")
                except hybridcache.Error as e:
                    outcome.append(e)
            caller = threading.Thread(target=connect, daemon=True)
            caller.start()
            caller.join(20)
            self.assertFalse(caller.is_alive(), "the connect did not give up")
            self.assertIsInstance(outcome[0], hybridcache.Timeout, outcome)
            for s in held + [listener]:
                s.close()


def under_a_sanitizer():
    """ASan, UBSan and TSan reserve terabytes of address space at start: a daemon of such a
    build cannot run under an address-space limit."""
    return any(v in os.environ for v in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "TSAN_OPTIONS"))


class TcpTest(OwnNodeTest):
    """A node serving TCP behind its shared secret: connect(tcp=..., token_file=...) logs in
    with the file's first line; a wrong secret, a missing file or a missing option is an
    error that names it."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="hc-py-tcp-")
        cls.token = os.path.join(cls.dir, "token")
        with open(cls.token, "wb") as f:  # CRLF, as an editor on Windows writes it
            f.write(b"py-tcp-secret-0123456789abcdef\r\n")
        cls.NODE_ARGS = ("--tcp", "127.0.0.1:0", "--token-file", cls.token)
        super().setUpClass()
        # The port the node bound, from its log (a bounded wait for the line, not a timing).
        for _ in range(400):
            m = re.search(r"serving on tcp (\S+) ", cls.node_process.log_text())
            if m:
                cls.address = m.group(1)
                return
            time.sleep(0.05)
        raise RuntimeError("no TCP address in the log: " + cls.node_process.log_text())

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_a_worker_logs_in_with_the_token_file_and_steps(self):
        with hybridcache.connect(tcp=self.address, token_file=self.token, timeout=30) as node:
            self.assertEqual(node.ping().protocol_version, 2)
            with node.open(small_spec("py-tcp")) as s:
                r = s.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1)])
                self.assertTrue(all(x.ok for x in r), [x.error for x in r])
                self.assertEqual(r[1].body.prefix_len, 0)

    def test_the_secret_is_the_first_line_without_its_blanks_as_the_node_reads_it(self):
        # The node read its CRLF file as "secret" (cli/token_file.hpp); so does connect(),
        # whatever blanks and line end a client's copy has, and whatever follows the line.
        for i, text in enumerate((b"py-tcp-secret-0123456789abcdef\r\n",
                                  b"py-tcp-secret-0123456789abcdef",
                                  b"\t py-tcp-secret-0123456789abcdef  \nsecond line\n")):
            copy = os.path.join(self.dir, f"copy{i}")
            with open(copy, "wb") as f:
                f.write(text)
            with hybridcache.connect(tcp=self.address, token_file=copy, timeout=30) as node:
                self.assertEqual(node.ping().protocol_version, 2, text)
        blank = os.path.join(self.dir, "blank")
        with open(blank, "wb") as f:
            f.write(b" \r\npy-tcp-secret-0123456789abcdef\n")
        with self.assertRaisesRegex(hybridcache.InvalidArgument, "no secret on its first line"):
            hybridcache.connect(tcp=self.address, token_file=blank, timeout=30)

    def test_a_wrong_or_missing_secret_is_refused_naming_why(self):
        wrong = os.path.join(self.dir, "wrong")
        with open(wrong, "w") as f:
            f.write("not-the-secret-0123456789abcdef\n")
        with self.assertRaisesRegex(hybridcache.InvalidArgument, "wrong token"):
            hybridcache.connect(tcp=self.address, token_file=wrong, timeout=30)
        with self.assertRaises(FileNotFoundError):
            hybridcache.connect(tcp=self.address, token_file=wrong + ".missing", timeout=30)
        with self.assertRaisesRegex(hybridcache.InvalidArgument, "token_file"):
            hybridcache.connect(tcp=self.address, timeout=30)
        # A port past 65535 (getaddrinfo connected to it modulo 65536) or 0: refused.
        for port in ("99999", "0"):
            with self.assertRaisesRegex(hybridcache.InvalidArgument, "port must be"):
                hybridcache.connect(tcp="127.0.0.1:" + port, token_file=self.token, timeout=30)
        with self.assertRaisesRegex(hybridcache.InvalidArgument, "not both"):
            hybridcache.connect(socket=self.node_process.socket, tcp=self.address,
                                token_file=self.token)
        with hybridcache.connect(tcp=self.address, token_file=self.token, timeout=30) as node:
            self.assertEqual(node.ping().protocol_version, 2, "the node serves on")


class OutOfMemoryTest(OwnNodeTest):
    """A spec within the node's limits that the host cannot allocate fails its open with
    OutOfMemory; the node (and every other session) goes on."""

    NODE_OPTIONS = {"address_space_limit": 2 << 30}  # it maps ~0.8 GiB at start

    @classmethod
    def why_not(cls):
        if under_a_sanitizer():
            return "a sanitizer build cannot run under an address-space limit"
        return None

    def test_an_instance_too_large_for_memory_fails_its_open_alone(self):
        with hybridcache.connect(socket=self.node_process.socket, timeout=120) as node:
            other = node.open(small_spec("py-oom-other"))
            big = small_spec("py-oom")
            big.hicache_bytes = 3 << 29  # L2 host pools of 1.5 GiB: past the address space
            with self.assertRaises(hybridcache.OutOfMemory) as caught:
                node.open(big)
            self.assertIn("not enough memory", str(caught.exception))
            self.assertEqual(node.ping().protocol_version, 2)
            r = other.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1)])
            self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            with node.open(small_spec("py-oom-after")) as s:
                self.assertTrue(s.step([cmd.Check(full=True)])[0].ok)
            other.close()
        self.assertTrue(self.node_process.alive())


class FileDescriptorLimitTest(OwnNodeTest):
    """More clients than the node's file descriptors: the ones past the limit wait in the
    listen backlog, the connections already open keep working, and once descriptors are
    free again new clients are served. (A failed accept once ended the RPC server for good:
    the node lived on, refusing every connection, and said nothing.)"""

    NODE_OPTIONS = {"nofile_limit": 64}  # ~20 in use once it serves

    def test_clients_past_the_descriptor_limit_wait_and_are_served_later(self):
        path = self.node_process.socket
        with hybridcache.connect(socket=path, timeout=60) as first:
            self.assertEqual(first.ping().protocol_version, 2)
            burst = []
            for _ in range(100):  # the kernel queues them; the node runs out of descriptors
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                burst.append(s)
            for _ in range(20):  # the node meets EMFILE and retries meanwhile
                self.assertEqual(first.ping().protocol_version, 2)
                time.sleep(0.05)
            for s in burst:
                s.close()
            with hybridcache.connect(socket=path, timeout=60) as later:
                self.assertEqual(later.ping().protocol_version, 2)
                with later.open(small_spec("py-nofile")) as session:
                    self.assertTrue(session.step([cmd.Check(full=True)])[0].ok)
        self.assertTrue(self.node_process.alive())
        with open(self.node_process.log.name) as log:
            text = log.read()
        self.assertIn("cannot accept a connection", text)
        self.assertIn("accepting connections again", text)


class SmallSharedMemoryTest(OwnNodeTest):
    """A /dev/shm smaller than the pools (a container's default is 64 MiB): the open that
    asks for them fails with OutOfMemory saying how much is free. The node once accepted
    them and died of SIGBUS at the first write past the free space."""

    NODE_OPTIONS = {"shm_bytes": 16 << 20}

    @classmethod
    def why_not(cls):
        return can_mount_tmpfs()

    def test_pools_larger_than_dev_shm_fail_their_open(self):
        with hybridcache.connect(socket=self.node_process.socket, timeout=60) as node:
            fits = small_spec("py-shm-fits")  # a few KiB
            big = small_spec("py-shm-big")
            big.kv_tokens = 65536
            big.kv_bytes_per_token = 1024  # a 64 MiB KV pool
            with node.open(fits) as s:
                with self.assertRaises(hybridcache.OutOfMemory) as caught:
                    node.open(big)
                self.assertIn("/dev/shm has", str(caught.exception))
                self.assertIn("No space left", str(caught.exception))
                # what did fit is whole: every page of it can be written
                for page in range(1, fits.kv_tokens + 1):
                    s.write_kv_page(page, bytes([page % 251]) * fits.kv_bytes_per_token)
                self.assertEqual(s.read_kv_page(fits.kv_tokens),
                                 bytes([fits.kv_tokens % 251]) * fits.kv_bytes_per_token)
                big.kv_tokens = 8192  # 8 MiB: fits
                with node.open(big) as s2:
                    for page in range(1, big.kv_tokens + 1, 64):
                        s2.write_kv_page(page, b"x" * big.kv_bytes_per_token)
            self.assertEqual(node.ping().protocol_version, 2)
        self.assertTrue(self.node_process.alive())


class PidNamespaceTest(unittest.TestCase):
    """Two nodes that share /dev/shm from PID namespaces of their own, as containers run with
    --ipc=host do: each is pid 1. The second once took the first's pools for a dead node's
    (its pid did not exist in the second's namespace, and was the second's own), unlinked
    them and created its own under the same names — which the first node then gave its next
    worker, who read and wrote the other node's memory."""

    @classmethod
    def setUpClass(cls):
        why = can_use_pid_namespace()
        if why:
            raise unittest.SkipTest(why)

    def test_a_node_keeps_its_pools_when_another_starts_beside_it(self):
        a = NodeProcess("--l3", "false", pid_namespace=True)
        self.addCleanup(a.stop)
        with hybridcache.connect(socket=a.socket, timeout=60) as node_a:
            first = node_a.open(small_spec("py-pidns"))
            first.kv_pool()[0:4] = b"AAAA"
            b = NodeProcess("--l3", "false", pid_namespace=True)
            self.addCleanup(b.stop)
            with hybridcache.connect(socket=b.socket, timeout=60) as node_b:
                other = node_b.open(small_spec("py-pidns"))
                other.kv_pool()[0:4] = b"BBBB"
                # Both are pid 1: the names alone (what the sweep once went by) agree.
                for s in (first, other):
                    self.assertTrue(s.pools.kv_shm.startswith("/hybridcache-1-"), s.pools.kv_shm)
                self.assertNotEqual(first.pools.kv_shm, other.pools.kv_shm)
                second = node_a.open(small_spec("py-pidns"))  # a's next worker
                self.assertEqual(second.pools.kv_shm, first.pools.kv_shm)
                self.assertEqual(bytes(second.kv_pool()[0:4]), b"AAAA")
                self.assertTrue(os.path.exists("/dev/shm" + first.pools.kv_shm))
                for s in (first, second, other):
                    s.close()


class CgroupMemoryTest(OwnNodeTest):
    """A node in a container whose memory limit is below the machine's (a pod's
    limits.memory): /proc/meminfo shows the machine, so pools past the limit passed the
    open's check, their pages in /dev/shm were charged to the node's cgroup, and the kernel's
    OOM killer took the node mid-open, with every session of every worker."""

    # 1 GiB: room for a sanitizer build's node (its shadow memory and quarantine count).
    NODE_OPTIONS = {"memory_limit": 1 << 30}

    @classmethod
    def why_not(cls):
        return can_use_memory_cgroup()

    def test_pools_past_the_cgroups_limit_fail_their_open(self):
        with hybridcache.connect(socket=self.node_process.socket, timeout=60) as node:
            with node.open(small_spec("py-cgroup-small")) as small:
                big = small_spec("py-cgroup-big")
                big.kv_tokens = 1 << 21
                big.kv_bytes_per_token = 1024  # a 2 GiB KV pool
                with self.assertRaises(hybridcache.OutOfMemory) as caught:
                    node.open(big)
                self.assertIn("cgroup", str(caught.exception))
                small.write_kv_page(1, b"x" * 8)
                self.assertEqual(small.read_kv_page(1), b"x" * 8)
            big.kv_tokens = 1 << 16  # 64 MiB: fits
            with node.open(big) as s:
                for page in range(1, big.kv_tokens + 1, 4096):
                    s.write_kv_page(page, b"y" * big.kv_bytes_per_token)
            self.assertEqual(node.ping().protocol_version, 2)
        self.assertTrue(self.node_process.alive())
        # The live requests' default bound is a quarter of the limit, not of the machine.
        self.assertIn("may hold %d tokens" % ((1 << 30) // 32), self.node_process.log_text())
        # So is the L3 index's: a sixteenth of the limit, not 1 GiB (the whole pod).
        self.assertIn("L3 index may take 64 MiB", self.node_process.log_text())


class DebugLogTest(OwnNodeTest):
    """--log-level debug names every session and Store client as it opens and closes (it
    logged nothing more than info before: no line of the node was at debug)."""

    NODE_ARGS = ("--log-level", "debug")

    def test_sessions_and_store_clients_are_named_as_they_open_and_close(self):
        with hybridcache.connect(socket=self.node_process.socket, timeout=30) as node:
            with node.open(small_spec("py-debug")) as s:
                s.step([cmd.Check()])
            with node.store("py-debug-store"):
                pass
            node.ping()  # the closes above have been handled by now
        log = self.node_process.log_text()
        opened = re.search(r"debug session ([0-9]+) opened on instance ([0-9]+)\n", log)
        self.assertIsNotNone(opened, log[-2000:])
        self.assertIn("debug session %s of instance %s closed\n" % opened.groups(), log)
        self.assertRegex(log, r'debug Store client opened \(identity "py-debug-store", arena /')
        self.assertIn('debug Store client closed (identity "py-debug-store")', log)


# What a worker running as another user does with a node: every kind of shared memory it
# maps and writes (L1 pools, request rows, token arena, Store arena). argv[1]: the socket.
_OTHER_USER_WORKER = r"""
import sys
import hybridcache
from hybridcache import cmd
spec = hybridcache.InstanceSpec()
spec.model_id, spec.kv_tokens, spec.ssm_slots, spec.request_rows = "py-group", 256, 16, 8
spec.ssm_slot_bytes, spec.kv_bytes_per_token = 64, 8
spec.max_context_len, spec.shared_rows, spec.shared_tokens = 32, True, 64
with hybridcache.connect(socket=sys.argv[1], timeout=30) as node, node.open(spec) as s:
    s.kv_pool()[:8] = bytes(range(8))
    s.ssm_pool()[64:128] = bytes(64)
    s.token_arena()[:16] = range(1, 17)
    r = s.step([cmd.Create(req=1, at=0, count=16), cmd.Match(req=1), cmd.AllocReq(req=1),
                cmd.AllocKv(req=1, to_end=True)])
    assert all(x.ok for x in r), [x.error for x in r]
    assert len(set(s.request_rows()[r[2].body.row, :16].tolist())) == 16
    with node.store("py-group-store") as store:
        store.arena[:64] = bytes(range(64))
        assert store.set(hybridcache.StorePool.KV_PAGE, [("k", [(0, 64)])]) == [True]
print("worker done")
"""


class GroupAccessTest(OwnNodeTest):
    """--group-access: a worker running as another user in the node's group connects and
    maps every kind of shared memory the node makes for it (its socket and those are 0660);
    without it, such a worker cannot even connect (0600)."""

    NODE_ARGS = ("--group-access", "true")
    OTHER_UID = 54321  # no account needed: setpriv sets the ids

    @classmethod
    def as_other_user(cls, *argv):
        package_dir = os.path.dirname(os.path.dirname(hybridcache.__file__))
        return subprocess.run(
            ["setpriv", f"--reuid={cls.OTHER_UID}", f"--regid={os.getegid()}", "--clear-groups",
             sys.executable, *argv],
            env=dict(os.environ, PYTHONPATH=package_dir, PYTHONDONTWRITEBYTECODE="1"),
            capture_output=True, text=True, timeout=120)

    @classmethod
    def why_not(cls):
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            return "needs root and setpriv, to run a worker as another user of the node's group"
        tried = cls.as_other_user("-c", "import hybridcache")
        if tried.returncode != 0:
            return ("another user cannot import hybridcache from where it was built "
                    "(a directory on its path is not readable by others): " + tried.stderr)
        return None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        os.chmod(cls.node_process.dir, 0o711)  # the socket's directory: others may pass

    def test_a_worker_of_the_nodes_group_uses_every_shared_memory(self):
        sock = self.node_process.socket
        self.assertEqual(os.stat(sock).st_mode & 0o777, 0o660)
        r = self.as_other_user("-c", _OTHER_USER_WORKER, sock)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("worker done", r.stdout)
        with hybridcache.connect(socket=sock, timeout=30) as node:
            for shm in (node.inspect()["instances"][0]["stream"][k] for k in ("kv_shm", "ssm_shm")):
                self.assertEqual(os.stat("/dev/shm" + shm).st_mode & 0o777, 0o660, shm)

    def test_without_it_a_worker_of_another_user_cannot_connect(self):
        plain = NodeProcess()
        try:
            os.chmod(plain.dir, 0o711)
            self.assertEqual(os.stat(plain.socket).st_mode & 0o777, 0o600)
            r = self.as_other_user("-c", _OTHER_USER_WORKER, plain.socket)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            self.assertIn("Permission denied (this user may not use the node's socket", r.stderr)
            self.assertIn("--group-access", r.stderr)  # the way out, named
        finally:
            plain.stop()


class FullDiskTest(OwnNodeTest):
    """A data disk smaller than --l3-capacity (64 GiB by default): once it is full, a put
    drops the values of the oldest segment and is written. The store once refused every put
    from then on (the disk never emptied: nothing reached the capacity), and RocksDB's LOG
    file, on the same disk, made the node abort at its next line — at the latest at stop."""

    NODE_OPTIONS = {"data_bytes": 48 << 20}
    # No free space kept (--l3-min-free 0): the disk fills, which is what this tests.
    NODE_ARGS = ("--l3-flush-seconds", "0.1", "--l3-min-free", "0")

    @classmethod
    def why_not(cls):
        return can_mount_tmpfs()

    def test_puts_go_on_when_the_disk_is_full_and_the_node_stops_cleanly(self):
        value = 1 << 20
        payload = bytes(range(256)) * (value // 256)
        with hybridcache.connect(socket=self.node_process.socket, timeout=60) as node:
            store = node.store("py-full-disk")
            store.arena[:value] = payload
            kv = hybridcache.StorePool.KV_PAGE
            written = [store.set(kv, [("page-%d" % i, [(0, value)])])[0] for i in range(120)]
            self.assertEqual(written.count(False), 0, "puts refused on a full disk")
            store.arena[:value] = bytes(value)
            self.assertEqual(store.get(kv, [("page-119", [(0, value)])]), [True])
            self.assertEqual(bytes(store.arena[:value]), payload)
            recent = store.get(kv, [("page-%d" % i, [(0, value)]) for i in range(110, 120)])
            self.assertTrue(all(recent), recent)
            self.assertEqual(store.get(kv, [("page-0", [(0, value)])]), [False],
                             "the oldest values made room")
            # Another file fills the disk while the index has a record to flush: RocksDB's
            # flushes fail and it logs that (into its LOG file, once).
            self.assertEqual(store.set(kv, [("page-last", [(0, value)])]), [True])
            self.assertTrue(self.node_process.alive(), self.node_process.log_text()[-3000:])
            filler = "/proc/%d/root%s/filler" % (self.node_process.proc.pid,
                                                 self.node_process.data_dir)
            try:
                f = open(filler, "wb")
            except FileNotFoundError:  # /proc/<pid> is gone
                self.fail("the node died: " + self.node_process.log_text()[-3000:])
            with f:
                try:
                    while True:
                        f.write(b"\0" * (1 << 20))
                except OSError:
                    pass
            time.sleep(1)  # ten timed flushes
            self.assertTrue(self.node_process.alive(), self.node_process.log_text()[-3000:])
            os.unlink(filler)
            self.assertEqual(node.ping().protocol_version, 2)
        self.node_process.halt()
        log = self.node_process.log_text()
        self.assertEqual(self.node_process.proc.returncode, 0, log[-3000:])
        self.assertIn("the disk is full", log)


class RetiredInstanceEventsTest(OwnNodeTest):
    """An instance whose shared memory was removed from under the node is retired: a fresh
    instance of the same spec takes new sessions while the old one's run on. Both publish
    KV events on the same topics, so a router following them must end with the fresh one's
    pages alone. Before, it kept the retired instance's pages as well; then, once a retired
    instance's end cleared its topics, it lost the fresh one's."""

    NODE_ARGS = ("--kv-events", "tcp://127.0.0.1:*", "--l3", "false")

    def test_a_subscriber_sees_the_fresh_instances_pages_only(self):
        import msgpack
        import zmq
        m = None
        for _ in range(200):  # the log line comes just before the socket
            m = re.search(r"kv events at (\S+) ", self.node_process.log_text())
            if m:
                break
            time.sleep(0.05)
        self.assertIsNotNone(m, self.node_process.log_text()[-2000:])
        ctx = zmq.Context()
        self.addCleanup(ctx.term)
        sub = ctx.socket(zmq.SUB)
        self.addCleanup(sub.close)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(m.group(1))
        sub.setsockopt(zmq.SUBSCRIBE, b"kv/")
        with hybridcache.connect(socket=self.node_process.socket, timeout=30) as node:
            # ZeroMQ's subscription reaches the node asynchronously: the first batch waits
            # until the subscriber receives something (a ping batch of its own instance).
            for _ in range(200):
                with node.open(small_spec("py-events-probe")) as probe:
                    probe.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1),
                                cmd.AllocReq(req=1), cmd.AllocKv(req=1, to_end=True),
                                cmd.Finish(req=1)])
                if sub.poll(50):
                    break
            while sub.poll(200):
                sub.recv_multipart()

            def fill(session, req, first):
                r = session.step([cmd.Create(req=req, tokens=list(range(first, first + 40))),
                                  cmd.Match(req=req), cmd.AllocReq(req=req),
                                  cmd.AllocKv(req=req, to_end=True), cmd.Finish(req=req)])
                self.assertTrue(all(x.ok for x in r), [x.error for x in r])

            old = node.open(small_spec("py-events-retired"))
            fill(old, 1, 1000)
            for name in (old.pools.kv_shm, old.pools.ssm_shm):
                os.unlink("/dev/shm/" + name.lstrip("/"))
            fresh = node.open(small_spec("py-events-retired"))  # a fresh instance
            self.assertNotEqual(fresh.pools.kv_shm, old.pools.kv_shm)
            fill(fresh, 2, 5000)
            fill(old, 3, 9000)  # the retired one's sessions go on
            old.close()         # and it ends
            doc = node.inspect(blocks=True)
            fresh.close()
        (inst,) = [i for i in doc["instances"] if "py-events-retired" in i["fingerprint"]]
        topic = inst["tree"]["event_topic"]
        want = {b["hash"] for b in inst["tree"]["blocks"]}
        self.assertEqual(len(want), 40)
        seen = set()
        while sub.poll(1000):
            t, _, payload = sub.recv_multipart()
            if t.decode() != topic:
                continue
            for e in msgpack.unpackb(payload)["events"]:
                if e["type"] == "AllBlocksCleared":
                    seen.clear()
                elif e["cache_group"] == "full":
                    hashes = set(e["block_hashes"])
                    seen = seen | hashes if e["type"] == "BlockStored" else seen - hashes
        self.assertEqual(seen, want, "the router's view of the topic vs the fresh instance")


class InterruptTest(OwnNodeTest):
    """Ctrl-C while a call waits for a node that does not answer (stopped with SIGSTOP: a
    hung node). Before, the call ignored it until the connection's timeout, as a C
    extension does that waits with the GIL released and never lets the signal handlers
    run; now the wait runs them every 50 ms, as time.sleep does. A call that is not
    interrupted would end in hybridcache.Timeout after 120 s instead of KeyboardInterrupt."""

    TIMEOUT = 120

    def stopped_node(self):
        """The node stopped until the test ends (or resume() is called).

        kill() returns before the process has stopped: the kernel wakes one of its threads to
        take SIGSTOP and stop the others, and on a loaded host that thread may wait for a
        CPU while another — the RPC thread, woken by a call — answers it. So this waits
        until every thread of the node is stopped (state T); a call made before then was
        answered in CI (a ping returned in 0.0 s from a "stopped" node)."""
        pid = self.node_process.proc.pid
        os.kill(pid, signal.SIGSTOP)
        self.addCleanup(os.kill, pid, signal.SIGCONT)

        def states():
            found = set()
            for task in os.listdir("/proc/%d/task" % pid):
                try:
                    with open("/proc/%d/task/%s/stat" % (pid, task)) as f:
                        found.add(f.read().rsplit(") ", 1)[1][0])
                except FileNotFoundError:  # a thread that ended meanwhile
                    pass
            return found

        # A bounded wait for the kernel's group stop (not a correctness timing).
        for _ in range(2000):
            if states() == {"T"}:
                break
            time.sleep(0.005)
        self.assertEqual(states(), {"T"}, "the node's threads did not all stop")
        return lambda: os.kill(pid, signal.SIGCONT)

    def signal_soon(self, handler, seconds=0.3):
        """SIGALRM after `seconds`, handled by `handler` (restored at the test's end)."""
        old = signal.signal(signal.SIGALRM, handler)
        self.addCleanup(signal.signal, signal.SIGALRM, old)
        self.addCleanup(signal.setitimer, signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def ctrl_c_soon(self):
        def interrupt(*_):
            raise KeyboardInterrupt
        self.signal_soon(interrupt)

    def test_ctrl_c_stops_a_call_and_the_connection_goes_on(self):
        for io_thread in (True, False):
            with self.subTest(io_thread=io_thread), hybridcache.connect(
                    socket=self.node_process.socket, timeout=self.TIMEOUT,
                    io_thread=io_thread) as node:
                session = node.open(small_spec("py-interrupt"))
                resume = self.stopped_node()
                self.ctrl_c_soon()
                with self.assertRaises(KeyboardInterrupt):
                    node.ping()
                self.ctrl_c_soon()
                with self.assertRaises(KeyboardInterrupt):
                    session.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1)])
                resume()
                # The cancelled calls do not hold the connection or the session up.
                self.assertEqual(node.ping().protocol_version, 2)
                r = session.step([cmd.Create(req=2, tokens=[4, 5, 6]), cmd.Match(req=2)])
                self.assertTrue(r[1].ok, r[1])
                session.close()

    def test_ctrl_c_stops_a_connect_that_gets_no_answer(self):
        with tempfile.TemporaryDirectory() as d:
            mute = os.path.join(d, "mute.sock")
            listener = socket.socket(socket.AF_UNIX)
            self.addCleanup(listener.close)
            listener.bind(mute)
            listener.listen(8)  # accepts (in the kernel's backlog) and never answers
            full = os.path.join(d, "full.sock")  # a backlog that is full: no connect ends
            busy = socket.socket(socket.AF_UNIX)
            self.addCleanup(busy.close)
            busy.bind(full)
            busy.listen(0)
            for _ in range(8):
                waiting = socket.socket(socket.AF_UNIX)
                self.addCleanup(waiting.close)
                waiting.setblocking(False)
                try:
                    waiting.connect(full)
                except BlockingIOError:
                    break
            for path in (mute, full):
                for io_thread in (True, False):
                    with self.subTest(path=os.path.basename(path), io_thread=io_thread):
                        self.ctrl_c_soon()
                        with self.assertRaises(KeyboardInterrupt):
                            hybridcache.connect(socket=path, timeout=self.TIMEOUT,
                                                io_thread=io_thread)

    def test_a_handler_that_does_not_raise_lets_the_call_go_on(self):
        for io_thread in (True, False):
            with self.subTest(io_thread=io_thread), hybridcache.connect(
                    socket=self.node_process.socket, timeout=self.TIMEOUT,
                    io_thread=io_thread) as node:
                resume = self.stopped_node()
                resumed = threading.Event()
                handled = threading.Event()
                ran_while_stopped = []

                def handler(*_):
                    ran_while_stopped.append(not resumed.is_set())
                    handled.set()

                def resume_after_the_handler():
                    # Before, the handler ran only once the call had returned: this thread
                    # then resumed the node after its 60 s and the handler ran after that.
                    handled.wait(60)
                    resumed.set()
                    resume()
                self.signal_soon(handler)
                threading.Thread(target=resume_after_the_handler, daemon=True).start()
                self.assertEqual(node.ping().protocol_version, 2)
                self.assertEqual(ran_while_stopped, [True])

    def test_ctrl_c_is_the_main_threads_and_leaves_other_threads_calls_alone(self):
        # Python runs signal handlers on its main thread only: Ctrl-C stops what that thread
        # does (here a sleep); a call another thread waits on goes on.
        outcome = []

        def worker():
            with hybridcache.connect(socket=self.node_process.socket, timeout=self.TIMEOUT,
                                     io_thread=False) as node:
                connected.set()
                called.wait(60)
                try:
                    outcome.append(node.ping().protocol_version)
                except BaseException as e:  # whatever it is, the assertion below shows it
                    outcome.append(e)
        connected, called = threading.Event(), threading.Event()
        t = threading.Thread(target=worker, daemon=True)
        t.start()
        self.assertTrue(connected.wait(60))
        resume = self.stopped_node()
        called.set()
        self.ctrl_c_soon()
        with self.assertRaises(KeyboardInterrupt):
            time.sleep(60)
        resume()
        t.join(60)
        self.assertEqual(outcome, [2])

    def test_ctrl_c_on_a_shared_connection_cancels_the_main_threads_call_only(self):
        # One connection (io_thread=True) for two threads: another thread's call runs on
        # the I/O thread while the main thread's waits behind it. Ctrl-C gives up the main
        # thread's call — which then never runs — and not the other one.
        with hybridcache.connect(socket=self.node_process.socket, timeout=self.TIMEOUT,
                                 io_thread=True) as node:
            with node.open(small_spec("py-interrupt-shared")) as session:
                resume = self.stopped_node()
                outcome = []

                def other():
                    try:
                        outcome.append(session.step([cmd.Create(req=1, tokens=[1, 2, 3])])[0].ok)
                    except BaseException as e:  # whatever it is, the assertion below shows it
                        outcome.append(e)
                t = threading.Thread(target=other, daemon=True)
                t.start()
                # Its call first: once its thread is inside Session.step (in the native call,
                # the GIL released), and more for the hand-over to the I/O thread — 0.2 s was
                # not always enough on a CI box running two test jobs (the main thread's call
                # went first, was sent, and ran at the resume).
                for _ in range(1200):
                    frame = sys._current_frames().get(t.ident)
                    if frame is not None and frame.f_code.co_name == "step":
                        break
                    time.sleep(0.05)
                time.sleep(1.0)
                self.ctrl_c_soon()
                with self.assertRaises(KeyboardInterrupt):
                    session.step([cmd.Create(req=2, tokens=[4, 5, 6])])
                # Ten interrupt checks' time for a wrong cancellation of the other call to
                # happen before the node answers it.
                time.sleep(0.5)
                resume()
                t.join(60)
                self.assertEqual(outcome, [True])
                # The main thread's create never ran: request 2 is unknown, request 1 is not.
                r = session.step([cmd.Match(req=1), cmd.Match(req=2)])
                self.assertTrue(r[0].ok, r[0])
                self.assertFalse(r[1].ok, r[1])


if __name__ == "__main__":
    unittest.main()
