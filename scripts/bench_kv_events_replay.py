#!/usr/bin/python3
"""A router's replay of the KV events from a running node (BENCHMARKS.md §12).

Starts a hybridcached (--daemon, default the release build's) with --kv-events and
--kv-events-replay on free local ports, runs --steps steps that each cache a request of
--tokens random tokens at page 1 (a 64 K-token pool, so evictions publish too), then asks
the replay socket for every kept batch from sequence 0 with a ZeroMQ DEALER that reads
them one by one (--delay-ms between two reads: a slow router), and prints one JSON object:
the node's last sequence, the batches replayed and whether the end marker came (a replay
is whole only with it), the time it took, and the node's RSS before and during.

Needs python3-zmq (the kv_events test's dependency). Compare two builds by alternating
--daemon:

  /usr/bin/python3 scripts/bench_kv_events_replay.py --steps 3000 --delay-ms 1
"""

import argparse
import json
import os
import re
import sys
import threading
import time

import node_probe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", default=node_probe.DAEMON)
    ap.add_argument("--steps", type=int, default=3000, help="requests cached (default 3000)")
    ap.add_argument("--tokens", type=int, default=2048, help="tokens a request (default 2048)")
    ap.add_argument("--delay-ms", type=float, default=0.0, help="pause between two reads")
    a = ap.parse_args()
    if a.steps <= 0 or not 0 < a.tokens <= 16384 or a.delay_ms < 0:
        sys.exit("--steps must be positive, --tokens in 1..16384, --delay-ms not negative")
    import zmq
    node, hybridcache = node_probe.start(a.daemon, "--kv-events", "tcp://127.0.0.1:*",
                                         "--kv-events-replay", "tcp://127.0.0.1:*")
    pid = node.proc.pid
    try:
        client = hybridcache.connect(socket=node.socket, timeout=600)
        with open(os.path.join(node.dir, "log")) as f:  # "kv events at X (replay at Y)"
            endpoints = re.findall(r"tcp://127\.0\.0\.1:\d+", f.read())
        if len(endpoints) < 2:
            sys.exit("the node's log names no replay endpoint")
        node_probe.fill(hybridcache, client, "replay", 65536, a.steps, a.tokens)
        last = client.inspect().get("kv_events", {}).get("last_sequence")
        print(f"published up to sequence {last}", file=sys.stderr)
        rss_before = node_probe.rss_mb(pid)
        peak = [rss_before]
        done = threading.Event()

        def watch():
            while not done.wait(0.05):
                peak[0] = max(peak[0], node_probe.rss_mb(pid))

        w = threading.Thread(target=watch)
        w.start()
        ctx = zmq.Context()
        d = ctx.socket(zmq.DEALER)
        d.setsockopt(zmq.LINGER, 0)
        d.connect(endpoints[-1])
        d.send_multipart([b"", (0).to_bytes(8, "big")])
        got, ended, t0 = 0, False, time.time()
        while d.poll(10000):  # 10 s without a message: the replay was cut
            parts = d.recv_multipart()  # ["", topic, sequence, payload]
            if parts[1] == b"" and parts[2] == b"\xff" * 8:
                ended = True
                break
            got += 1
            if a.delay_ms:
                time.sleep(a.delay_ms / 1000)
        took = time.time() - t0 - (0 if ended else 10)
        done.set()
        w.join()
        print(json.dumps({
            "daemon": a.daemon, "steps": a.steps, "tokens": a.tokens, "delay_ms": a.delay_ms,
            "last_sequence": last, "replayed_batches": got, "end_marker": ended,
            "replay_s": round(took, 1), "node_rss_mb_before": rss_before,
            "node_rss_mb_peak_during": peak[0]}))
    finally:
        node.stop()


if __name__ == "__main__":
    main()
