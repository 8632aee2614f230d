#!/usr/bin/python3
"""Calls per second and call latency with many workers at once (BENCHMARKS.md §4.11,
§4.12).

N Python workers, each a thread with its own connection and its own instance (a model of
its own, as tensor-parallel ranks or separate engines have), repeat a call for --seconds:
by default a step (create a 256-token request, match it, abort it — a small step whose
cost is the round trip); --call ping or exists (a Store's hit query for 16 keys, the
SGLang backend's most frequent call) instead. Each
variant — a set of --flags (hybridcached flags, "" = the defaults) by each --io-thread
(the workers' connect(io_thread=...): "yes", the default, or "no", calls on the worker's
own thread) — runs for each count of --clients, alternating, --runs times. One JSON object
per run on stdout:

  /usr/bin/python3 scripts/bench_many_workers.py --clients 1 8 32 \\
      --flags "" "--step-spin-us 0"
  /usr/bin/python3 scripts/bench_many_workers.py --clients 1 8 --io-thread yes no
  /usr/bin/python3 scripts/bench_many_workers.py --call ping --clients 1 --io-thread yes no

HC_PYTHON_DIR names the package's directory when it is not the release build's
(scripts/gpu-bundle.sh's bundle).
"""

import argparse
import itertools
import json
import threading
import time

import node_probe


def run(daemon, flags, io_thread, clients, seconds, call="step"):
    node, hybridcache = node_probe.start(daemon, *flags.split())
    cmd = hybridcache.cmd
    latencies, errors = [], []
    lock = threading.Lock()
    stop_at = [0.0]  # set as the barrier lets everyone go: before any worker looks at it
    start = threading.Barrier(clients + 1,
                              action=lambda: stop_at.__setitem__(0, time.monotonic() + seconds))

    def calls(c, i):
        """The measured call of worker i on connection c, and what to close after."""
        if call == "ping":
            return c.ping, None
        if call == "exists":  # the SGLang backend's hit query: 16 page keys, a state sidecar
            store = c.store(f"worker-{i}")
            keys = [f"page-{i}-{k}" for k in range(16)]
            sidecar = [hybridcache.Sidecar(hybridcache.StorePool.SSM_STATE, True, 1)]
            return (lambda: store.exists(keys, sidecar)), store
        spec = hybridcache.InstanceSpec()
        spec.model_id, spec.kv_tokens, spec.ssm_slots = f"worker-{i}", 1 << 16, 64
        s = c.open(spec)
        tokens = list(range(i * 1000, i * 1000 + 256))
        req = [0]

        def step():
            req[0] += 1
            s.step([cmd.Create(req=req[0], tokens=tokens), cmd.Match(req=req[0]),
                    cmd.Abort(req=req[0])])
        return step, s

    def worker(i):
        try:
            with hybridcache.connect(socket=node.socket, timeout=60, io_thread=io_thread) as c:
                one, opened = calls(c, i)
                mine = []
                start.wait()
                while time.monotonic() < stop_at[0]:
                    t = time.perf_counter()
                    one()
                    mine.append(time.perf_counter() - t)
                if opened is not None:
                    opened.close()
            with lock:
                latencies.extend(mine)
        except Exception as e:  # reported, not raised in a thread
            with lock:
                errors.append(repr(e))
            start.abort()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    try:
        start.wait()
    except threading.BrokenBarrierError:
        pass
    for t in threads:
        t.join()
    node.stop()
    mode = "yes" if io_thread else "no"
    if errors or not latencies:
        return {"call": call, "flags": flags, "io_thread": mode, "clients": clients,
                "error": errors[:3] or ["no call ran"]}
    latencies.sort()
    pick = lambda q: round(latencies[min(len(latencies) - 1, int(len(latencies) * q))] * 1e6, 1)
    return {"call": call, "flags": flags, "io_thread": mode, "clients": clients, "calls_per_s": round(len(latencies) / seconds),
            "p50_us": pick(0.5), "p99_us": pick(0.99)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", default=node_probe.DAEMON)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--flags", nargs="+", default=["", "--step-spin-us 0"],
                    help='hybridcached flags per variant ("" = the defaults)')
    ap.add_argument("--io-thread", nargs="+", choices=["yes", "no"], default=["yes"],
                    help="the workers' connect(io_thread=...) per variant")
    ap.add_argument("--call", choices=["step", "ping", "exists"], default="step",
                    help="what each worker repeats: a small step (default), a ping, or a "
                         "Store.exists of 16 keys")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--runs", type=int, default=2)
    a = ap.parse_args()
    if min(a.clients) < 1 or a.seconds <= 0 or a.runs < 1:
        ap.error("--clients, --seconds and --runs must be positive")
    for n in a.clients:
        for r in range(a.runs):
            for flags, mode in itertools.product(a.flags, a.io_thread):
                out = run(a.daemon, flags, mode == "yes", n, a.seconds, a.call)
                out["run"] = r
                print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
