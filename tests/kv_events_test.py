"""The router's view: a subscriber written from the format's documentation (README "Route on
it": plain ZeroMQ and msgpack, no hybridcache code) rebuilds, from the node's KV events
alone, every instance's set of device KV pages and SSM state checkpoints — so the resumable
depth of any prefix — and it must equal what `hcctl inspect --blocks` shows after hcsim
runs on small pools with a host tier (evictions, demotions, load-backs) and two models.
Missed batches (a subscriber that joins late) come from the replay socket.

Usage: /usr/bin/python3 tests/kv_events_test.py HYBRIDCACHED HCSIM HCCTL"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from collections import defaultdict

import msgpack
import zmq

DAEMON, HCSIM, HCCTL = ((os.path.abspath(p) for p in sys.argv[1:4]) if len(sys.argv) >= 4
                        else (None, None, None))


def apply(replica, topic, batch):
    """One batch onto the replica: {topic: {hash: [pages, checkpoints, parent]}}."""
    blocks = replica[topic]
    for e in batch["events"]:
        kind = e["type"]
        if kind == "AllBlocksCleared":
            blocks.clear()
            continue
        group = e["cache_group"]
        if kind == "BlockStored" and group == "full":
            parent = e["parent_block_hash"]
            for h in e["block_hashes"]:  # consecutive pages of one chain
                b = blocks.setdefault(h, [0, 0, None])
                b[0] += 1
                b[2] = parent
                parent = h
        elif kind == "BlockRemoved" and group == "full":
            for h in e["block_hashes"]:
                blocks[h][0] -= 1
                assert blocks[h][0] >= 0
                if blocks[h][0] == 0:
                    assert blocks[h][1] == 0, "a checkpoint outlived its page"
                    del blocks[h]
        else:  # a state checkpoint at the page it ends
            for h in e["block_hashes"]:
                blocks[h][1] += 1 if kind == "BlockStored" else -1
                assert 0 <= blocks[h][1] <= blocks[h][0]


def rebuilt(batches):
    """Every topic's pages from `batches` ({sequence: (topic, batch)}), applied in order."""
    replica = defaultdict(dict)
    for n in sorted(batches):
        apply(replica, *batches[n])
    return replica


def resumable_depth(blocks, tip):
    """How many pages back from `tip` a request can resume: the depth of the deepest
    checkpointed page on the chain root..tip."""
    chain, h = [], tip
    while h is not None:
        chain.append(h)
        h = blocks[h][2]
    chain.reverse()
    depth = 0
    for i, h in enumerate(chain):
        if blocks[h][1] > 0:
            depth = i + 1
    return depth


@unittest.skipIf(DAEMON is None, "usage: kv_events_test.py HYBRIDCACHED HCSIM HCCTL")
class KvEventsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hc-events-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.sock = os.path.join(self.tmp, "s")
        self.ctx = zmq.Context()
        self.addCleanup(self.ctx.term)
        self.start_node([])

    def start_node(self, extra):
        """A node with its event endpoints (self.pub, self.replay) and `extra` options."""
        self.log = open(os.path.join(self.tmp, "log"), "w+b")
        self.addCleanup(self.log.close)
        self.node = subprocess.Popen(
            [DAEMON, "--socket", self.sock, "--data-dir", os.path.join(self.tmp, "data"),
             "--metrics", "off", "--kv-events", "tcp://127.0.0.1:*",
             "--kv-events-replay", "tcp://127.0.0.1:*"] + extra, stdout=self.log, stderr=self.log)
        self.addCleanup(self.stop)
        m = None
        for _ in range(600):  # a hang guard
            self.log.seek(0)
            text = self.log.read()
            # The endpoints are logged before the socket serves: wait for both.
            m = re.search(rb"kv events at (\S+) \(replay at (\S+)\)", text)
            if (m and b"hybridcached ready" in text) or self.node.poll() is not None:
                break
            time.sleep(0.05)
        self.assertIsNotNone(m, "the node did not announce its event endpoints")
        self.pub, self.replay = m.group(1).decode(), m.group(2).decode()

    def stop(self):
        self.node.terminate()
        self.node.wait(timeout=30)

    def inspect(self):
        out = subprocess.run([HCCTL, "--socket", self.sock, "inspect", "--blocks", "--json"],
                             capture_output=True, text=True, timeout=60, check=True).stdout
        return json.loads(out)

    def settled(self):
        """inspect --blocks once two in a row agree (tier work still landing changes it),
        without its "node" (the process: its uptime moves at every call)."""
        last = None
        for _ in range(200):
            doc = self.inspect()
            doc.pop("node", None)
            if doc == last:
                return doc
            last = doc
            time.sleep(0.05)
        self.fail("the node never settled")

    def replay_from(self, start):
        s = self.ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.replay)
        s.send_multipart([b"", start.to_bytes(8, "big")])
        out = {}
        while True:
            self.assertTrue(s.poll(30000), "no replay answer")
            _, topic, seq, payload = s.recv_multipart()
            n = int.from_bytes(seq, "big", signed=True)
            if n == -1:
                break
            out[n] = (topic.decode(), msgpack.unpackb(payload))
        s.close()
        return out

    def subscribe(self):
        sub = self.ctx.socket(zmq.SUB)
        self.addCleanup(sub.close)
        sub.setsockopt(zmq.LINGER, 0)
        sub.connect(self.pub)
        sub.setsockopt(zmq.SUBSCRIBE, b"kv/")
        return sub

    def hcsim(self, model, args, ops=4000):
        small = ["--kv-tokens", "4096", "--slots", "32", "--max-context", "1200", "--batch", "4"]
        r = subprocess.run([HCSIM, "--socket", self.sock, "--ops", str(ops), "--workers", "2",
                            "--seed", "11", "--json", "--progress", "false", "--model", model]
                           + small + args, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def batches_up_to(self, sub, last):
        """Batches 1..last: live ones, then whatever the subscriber missed from the replay."""
        batches = {}
        while sub.poll(200):
            topic, seq, payload = sub.recv_multipart()
            batches[int.from_bytes(seq, "big")] = (topic.decode(), msgpack.unpackb(payload))
        missing = [n for n in range(1, last + 1) if n not in batches]
        if missing:
            batches.update(self.replay_from(missing[0]))
        self.assertEqual(sorted(batches), list(range(1, last + 1)), "every sequence number once")
        return batches

    def test_events_alone_rebuild_the_device_pages_and_checkpoints(self):
        sub = self.subscribe()
        self.hcsim("events-a", ["--strategy", "extra_buffer", "--host-ratio", "3"])
        self.hcsim("events-b", ["--strategy", "no_buffer"])
        doc = self.settled()
        last = doc["kv_events"]["last_sequence"]
        self.assertGreater(last, 0)
        # Live batches, then whatever the subscriber missed (it joined while the node ran).
        batches = self.batches_up_to(sub, last)
        replica = rebuilt(batches)

        kinds = defaultdict(int)
        for topic, b in batches.values():
            for e in b["events"]:
                kinds[(e["type"], e.get("cache_group"))] += 1
        for k in (("BlockStored", "full"), ("BlockRemoved", "full"), ("BlockStored", "mamba"),
                  ("BlockRemoved", "mamba")):
            self.assertGreater(kinds[k], 0, f"the run should produce {k} events: {dict(kinds)}")

        self.assertEqual(len(doc["instances"]), 2)
        for inst in doc["instances"]:
            tree = inst["tree"]
            want = defaultdict(lambda: [0, 0, None])
            topics = set()
            for b in tree["blocks"]:
                topics.add(tree["event_topic"] + b["namespace"])
                w = want[b["hash"]]
                w[0] += 1
                w[1] += 1 if b["checkpoint"] else 0
                w[2] = b["parent"]
            self.assertGreater(len(want), 0, inst["fingerprint"])
            (topic,) = topics
            self.assertEqual(replica[topic], dict(want), f"{topic}: events vs inspect --blocks")
            # Equal sets give equal resumable depths for every prefix; spot-check them.
            depths_events = {h: resumable_depth(replica[topic], h) for h in replica[topic]}
            depths_node = {h: resumable_depth(want, h) for h in want}
            self.assertEqual(depths_events, depths_node)
            self.assertGreater(max(depths_node.values()), 0, "some prefix is resumable")

    def test_an_instance_that_ends_clears_its_topic(self):
        """An instance dropped when idle, and every instance when the node stops, takes its
        pages off the device: its topics get AllBlocksCleared, so a router that follows them
        does not keep routing to pages that are gone (before, their last state stayed)."""
        self.stop()
        self.start_node(["--max-idle-instances", "0"])  # dropped as its last session closes
        sub = self.subscribe()
        self.hcsim("ends-a", ["--strategy", "extra_buffer"], ops=1500)
        doc = self.settled()
        self.assertEqual(doc["instances"], [], "the idle instance should have been dropped")
        batches = self.batches_up_to(sub, doc["kv_events"]["last_sequence"])
        replica = rebuilt(batches)
        self.assertEqual(len(replica), 1, list(replica))
        for topic, blocks in replica.items():
            self.assertEqual(blocks, {}, f"{topic}: pages of a dropped instance")
        last_kind = batches[max(batches)][1]["events"][-1]["type"]
        self.assertEqual(last_kind, "AllBlocksCleared")

        # The node's stop: each instance it kept clears its topic before the node exits.
        self.stop()
        self.start_node([])
        sub = self.subscribe()
        self.hcsim("ends-b", ["--strategy", "no_buffer"], ops=1500)
        doc = self.settled()
        (inst,) = doc["instances"]
        self.assertGreater(len(inst["tree"]["blocks"]), 0)
        batches = self.batches_up_to(sub, doc["kv_events"]["last_sequence"])
        self.node.terminate()
        self.assertEqual(self.node.wait(timeout=30), 0)
        while sub.poll(2000):  # what the stop published
            topic, seq, payload = sub.recv_multipart()
            batches[int.from_bytes(seq, "big")] = (topic.decode(), msgpack.unpackb(payload))
        self.assertEqual(sorted(batches), list(range(1, max(batches) + 1)))
        replica = rebuilt(batches)
        (topic,) = replica
        self.assertEqual(topic, inst["tree"]["event_topic"])
        self.assertEqual(replica[topic], {}, "pages of a stopped node")

    def test_a_bad_endpoint_is_refused_at_start(self):
        r = subprocess.run([DAEMON, "--socket", os.path.join(self.tmp, "x"), "--metrics", "off",
                            "--data-dir", os.path.join(self.tmp, "d2"), "--kv-events",
                            "nonsense://here"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kv-events nonsense://here: a subscriber in another process reaches "
                      "only tcp:// or ipc://", r.stdout + r.stderr)
        r = subprocess.run([DAEMON, "--socket", os.path.join(self.tmp, "y"), "--metrics", "off",
                            "--data-dir", os.path.join(self.tmp, "d3"), "--kv-events-replay",
                            "tcp://127.0.0.1:*"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--kv-events-replay needs --kv-events", r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[4:])
