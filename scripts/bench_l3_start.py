#!/usr/bin/python3
"""How long a hybridcached with a full L3 store takes to serve (BENCHMARKS.md §13).

Fills an L3 store with --values values once (through the Store capability of a node of
--fill-daemon, default the release build's: 64-hex-digit keys, as SGLang's page hashes,
of --value-bytes bytes each, --l3-index-memory 0 so that none is evicted), then starts
each daemon of --daemon (one or more builds; the store's format is the same) on that data
directory --runs times, alternating, and prints per start:

  * serving_s: from exec until the socket answers a ping (what a worker, or a startup
    probe, waits for),
  * l3_ready_s: until `inspect` shows every value in the L3 store (the tier serves),
  * rss_mb: the node's RSS then, and stop_s: how long SIGTERM then takes.

One JSON object per start on stdout; progress on stderr. The fill is kept under --dir
(default /tmp/hc-bench-l3-start) and reused while its value count matches.

  /usr/bin/python3 scripts/bench_l3_start.py --values 1000000
  /usr/bin/python3 scripts/bench_l3_start.py --values 3000000 \\
      --daemon /tmp/before/build/release/actors/daemon/hybridcached build/release/actors/daemon/hybridcached
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import node_probe


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) // 1024


class Daemon:
    """One hybridcached process on `data` (its own socket), timed from exec."""

    def __init__(self, binary, data, *args):
        self.socket = os.path.join(data, "bench.sock")
        if os.path.exists(self.socket):
            os.unlink(self.socket)
        self.log = open(os.path.join(data, "bench.log"), "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [binary, "--socket", self.socket, "--metrics", "off", "--data-dir", data,
             "--l3-index-memory", "0", *args], stdout=self.log, stderr=subprocess.STDOUT)

    def client(self, hybridcache, give_up_s=600):
        """A connected client once a ping answers, and the seconds since exec."""
        deadline = time.monotonic() + give_up_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"the daemon exited with {self.proc.returncode}; see {self.log.name}")
            try:
                c = hybridcache.connect(socket=self.socket)
                c.ping()
                return c, time.monotonic() - self.t0
            except (hybridcache.Error, OSError):
                time.sleep(0.005)
        sys.exit("the daemon did not serve within %d s" % give_up_s)

    def stop(self):
        t = time.monotonic()
        self.proc.terminate()
        self.proc.wait(timeout=600)
        self.log.close()
        return time.monotonic() - t


def l3_values(client):
    """Values in the L3 store, or None while it is still reading its index."""
    l3 = client.inspect()["host_storage"]["l3"]
    return None if l3.get("loading", False) else l3["values"]


def fill(hybridcache, daemon, data, values, value_bytes):
    """Stores `values` values through one Store (an external client's keys)."""
    d = Daemon(daemon, data)
    c, _ = d.client(hybridcache)
    st = c.store("bench")
    st.arena[0:value_bytes] = bytes(range(256)) * (value_bytes // 256) + bytes(value_bytes % 256)
    batch = 10000
    t = time.monotonic()
    for start in range(0, values, batch):
        keys = [hashlib.sha256(str(i).encode()).hexdigest()
                for i in range(start, min(values, start + batch))]
        ok = st.set(hybridcache.StorePool.KV_PAGE, [(k, [(0, value_bytes)]) for k in keys])
        if not all(ok):
            sys.exit(f"a set failed in the batch from {start}")
        if start // batch % 50 == 0:
            log(f"filled {start + len(keys)} of {values} values ({time.monotonic() - t:.0f} s)")
    st.close()
    c.close()
    d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", nargs="+", default=[node_probe.DAEMON],
                    help="the builds to start, alternating (default: the release build)")
    ap.add_argument("--fill-daemon", default=node_probe.DAEMON)
    ap.add_argument("--values", type=int, default=1000000)
    ap.add_argument("--value-bytes", type=int, default=64)
    ap.add_argument("--runs", type=int, default=2, help="starts per build (default 2)")
    ap.add_argument("--dir", default="/tmp/hc-bench-l3-start")
    a = ap.parse_args()
    for d in [a.fill_daemon, *a.daemon]:
        if not os.access(d, os.X_OK):
            sys.exit(f"{d}: not an executable (build it first)")
    _, hybridcache = node_probe.start(a.fill_daemon)  # the package; its node is not used
    data = os.path.join(a.dir, "data")
    marker = os.path.join(a.dir, "filled")
    want = f"{a.values} {a.value_bytes}"
    if not os.path.exists(marker) or open(marker).read() != want:
        subprocess.run(["rm", "-rf", a.dir], check=True)
        os.makedirs(data)
        fill(hybridcache, a.fill_daemon, data, a.values, a.value_bytes)
        with open(marker, "w") as f:
            f.write(want)
    for run in range(a.runs):
        for binary in a.daemon:
            subprocess.run(["sync"], check=True)
            d = Daemon(binary, data)
            c, serving = d.client(hybridcache)
            while True:
                n = l3_values(c)
                if n is not None:
                    break
                time.sleep(0.01)
            ready = time.monotonic() - d.t0
            rss = rss_mb(d.proc.pid)
            c.close()
            stop = d.stop()
            if n != a.values:
                sys.exit(f"{binary}: the L3 store holds {n} values, not {a.values}")
            print(json.dumps({"daemon": binary, "run": run, "values": n,
                              "serving_s": round(serving, 3), "l3_ready_s": round(ready, 2),
                              "rss_mb": rss, "stop_s": round(stop, 2)}), flush=True)


if __name__ == "__main__":
    main()
