"""Connections made with ``io_thread=False`` against a real hybridcached: calls on the
connecting thread, other threads refused, what another thread drops closed by the owning
thread (at its next call or its end), and a connection dropped elsewhere severed at once.
(A forked child: test_node.py, both settings.)"""

import os
import threading
import time
import unittest

import hybridcache
from hybridcache import cmd
from test_node import OwnNodeTest, small_spec


def native_threads():
    """Threads of this process, the native ones (an I/O thread) included."""
    return len(os.listdir("/proc/self/task"))


def in_a_thread(fn):
    """Runs fn on a new thread; returns what it returned or raises what it raised."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # handed to the caller
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


class CallingThreadTest(OwnNodeTest):

    def connect(self, io_thread=False):
        return hybridcache.connect(socket=self.node_process.socket, timeout=30,
                                   io_thread=io_thread)

    def setUp(self):
        self.watcher = self.connect(io_thread=True)

    def tearDown(self):
        self.watcher.close()

    def sessions_become(self, want):
        """The node's open sessions, polled until `want` (the 30 s bound is a hang guard,
        not a timing assertion: the node learns of a dropped connection on its own)."""
        give_up = time.monotonic() + 30
        while True:
            now = self.watcher.inspect()["sessions"]
            if now == want or time.monotonic() > give_up:
                return now
            time.sleep(0.01)

    def test_calls_run_on_the_connecting_thread(self):
        before = native_threads()
        with self.connect() as node:
            self.assertEqual(native_threads(), before, "io_thread=False started a thread")
            self.assertEqual(node.ping().protocol_version, 2)
            with node.open(small_spec("py-caller")) as s:
                r = s.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1),
                            cmd.Abort(req=1)])
                self.assertTrue(all(x.ok for x in r), [x.error for x in r])
            with node.store("py-caller-store") as store:
                kv = hybridcache.StorePool.KV_PAGE
                store.arena[:4] = b"page"
                self.assertEqual(store.set(kv, [("k", [(0, 4)])]), [True])
                store.arena[:4] = b"...."
                self.assertEqual(store.get(kv, [("k", [(0, 4)])]), [True])
                self.assertEqual(bytes(store.arena[:4]), b"page")
        with self.connect(io_thread=True) as node:  # the control: the default has a thread
            self.assertEqual(native_threads(), before + 1)
            node.ping()

    def test_another_threads_calls_are_refused_and_the_owner_goes_on(self):
        with self.connect() as node:
            s = node.open(small_spec("py-caller"))
            store = node.store("py-caller-store")
            for call in (node.ping, lambda: s.step([cmd.Check()]), s.close,
                         lambda: store.exists(["k"]), store.close):
                with self.assertRaises(hybridcache.InvalidArgument) as caught:
                    in_a_thread(call)
                self.assertIn("io_thread", str(caught.exception))
            self.assertFalse(s.closed, "a refused close marked the session closed")
            self.assertFalse(store.closed)
            self.assertTrue(s.step([cmd.Check()])[0].ok)
            s.close()
            store.close()
            self.assertEqual(node.ping().protocol_version, 2)

    def test_what_another_thread_drops_is_closed_at_the_owners_next_call(self):
        with self.connect() as node:
            held = [node.open(small_spec("py-caller"))]
            self.assertEqual(self.sessions_become(1), 1)
            in_a_thread(lambda: held.clear())  # the session's last reference goes there
            node.ping()  # runs the close the other thread left
            self.assertEqual(self.watcher.inspect()["sessions"], 0)

    def test_what_another_thread_drops_is_closed_when_the_owner_ends(self):
        handed, kept = [], []
        ready, dropped = threading.Event(), threading.Event()

        def owner():
            node = self.connect()
            handed.append(node.open(small_spec("py-caller")))
            kept.extend([node, node.open(small_spec("py-caller"))])  # outlive this thread
            ready.set()
            dropped.wait(30)  # then ends without another call

        t = threading.Thread(target=owner)
        t.start()
        ready.wait(30)
        self.assertEqual(self.sessions_become(2), 2)
        handed.clear()  # dropped here: the close waits for the owner
        dropped.set()
        t.join()
        self.assertEqual(self.sessions_become(1), 1, "the owner's end did not close it")
        with self.assertRaises(hybridcache.Unavailable) as caught:
            kept[0].ping()
        self.assertIn("ended", str(caught.exception))
        kept.clear()  # the connection, dropped here: severed, the node lets its session go
        self.assertEqual(self.sessions_become(0), 0)

    def test_a_connection_dropped_by_another_thread_is_severed_at_once(self):
        held = [self.connect()]
        held.append(held[0].open(small_spec("py-caller")))
        self.assertEqual(self.sessions_become(1), 1)
        in_a_thread(lambda: held.clear())  # session and connection: their last references
        self.assertEqual(self.sessions_become(0), 0,
                         "the node kept the session of a connection dropped elsewhere")
        # This thread, their owner, goes on: it runs what was left to it at its next call.
        with self.connect() as node:
            self.assertEqual(node.ping().protocol_version, 2)


if __name__ == "__main__":
    unittest.main()
