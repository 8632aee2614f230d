#!/usr/bin/python3
"""What `hcctl inspect --blocks` costs a running node (BENCHMARKS.md §12).

Starts a hybridcached (--daemon, default the release build's) on a private socket, caches
--tokens tokens (page --page) in one instance as finished requests of 16 K random tokens,
then runs `hcctl inspect --blocks --json` while another thread of this script keeps
sending one-command steps (a lookup) to the same instance, and prints:

  * the answer's size and its wall time (hcctl included: it parses the document),
  * the node's CPU time meanwhile (the lookups' included),
  * the slowest lookup meanwhile: how long the listing held up the instance's steps,
  * the node's RSS before and after.

One JSON object per run on stdout; progress on stderr. Compare two builds by alternating
--daemon between them: the protocol has not changed, so the current hcctl and Python
package drive either.

  /usr/bin/python3 scripts/bench_inspect_blocks.py --page 1 --tokens 393216
  /usr/bin/python3 scripts/bench_inspect_blocks.py --daemon /tmp/before/build/release/actors/daemon/hybridcached
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time

import node_probe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", default=node_probe.DAEMON)
    ap.add_argument("--hcctl", default=os.path.join(node_probe.BUILD, "tools/hcctl/hcctl"))
    ap.add_argument("--page", type=int, default=1, help="tokens per page (default 1)")
    ap.add_argument("--tokens", type=int, default=393216,
                    help="tokens to cache, a multiple of 16384 (default 393216)")
    a = ap.parse_args()
    if a.tokens <= 0 or a.tokens % 16384 or a.page <= 0 or 16384 % a.page:
        sys.exit("--tokens must be a positive multiple of 16384 and --page divide 16384")
    if not os.access(a.hcctl, os.X_OK):
        sys.exit(f"{a.hcctl}: not an executable (build the release preset first)")
    node, hybridcache = node_probe.start(a.daemon)
    from hybridcache import cmd
    pid = node.proc.pid
    try:
        client = hybridcache.connect(socket=node.socket, timeout=600)
        s = node_probe.fill(hybridcache, client, "inspect-blocks", a.tokens + 2 * 16384,
                            a.tokens // 16384, 16384, a.page)
        print(f"cached {a.tokens} tokens at page {a.page}", file=sys.stderr)
        rss_before = node_probe.rss_mb(pid)
        stop = threading.Event()
        slowest = [0.0]

        def lookups():
            while not stop.is_set():
                t0 = time.perf_counter()
                s.step([cmd.Lookup(tokens=[1, 2, 3])])
                slowest[0] = max(slowest[0], time.perf_counter() - t0)

        th = threading.Thread(target=lookups)
        th.start()
        time.sleep(0.3)
        c0, t0 = node_probe.cpu_s(pid), time.time()
        out = subprocess.run([a.hcctl, "--socket", node.socket, "inspect", "--blocks", "--json"],
                             capture_output=True)
        wall, cpu = time.time() - t0, node_probe.cpu_s(pid) - c0
        stop.set()
        th.join()
        print(json.dumps({
            "daemon": a.daemon, "page": a.page, "cached_tokens": a.tokens,
            "hcctl_exit": out.returncode, "answer_bytes": len(out.stdout),
            "error": out.stderr.decode(errors="replace").strip(),
            "wall_s": round(wall, 2), "node_cpu_s": round(cpu, 2),
            "slowest_concurrent_step_ms": round(slowest[0] * 1e3, 1),
            "node_rss_mb_before": rss_before, "node_rss_mb_after": node_probe.rss_mb(pid)}))
    finally:
        node.stop()


if __name__ == "__main__":
    main()
