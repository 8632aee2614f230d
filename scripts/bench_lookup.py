#!/usr/bin/python3
"""A router's or a scheduling policy's lookups from Python, with and without their KV ids
(`cmd.Lookup(tokens, without_indices=True)`; BENCHMARKS.md §4.17).

Starts a hybridcached (--daemon, default the release build's) on a private socket, caches
--lookups finished requests of --tokens random tokens each, then times --reps steps of
--lookups lookups (one per cached prompt, every prompt wholly cached), the two forms
alternated step by step, and prints one JSON object: p50 / p99 per form in microseconds,
and the p50 of reading a with-ids step's ids in Python, as lists (`indices`) and as NumPy
arrays (`indices_array`; BENCHMARKS.md §4.18).

  /usr/bin/python3 scripts/bench_lookup.py --tokens 65536
"""

import argparse
import json
import random
import statistics
import sys
import time

import node_probe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--daemon", default=node_probe.DAEMON)
    ap.add_argument("--tokens", type=int, default=65536, help="tokens a prompt (default 65536)")
    ap.add_argument("--lookups", type=int, default=8, help="lookups a step (default 8)")
    ap.add_argument("--reps", type=int, default=200, help="steps of each form (default 200)")
    a = ap.parse_args()
    if a.tokens <= 0 or a.lookups <= 0 or a.reps <= 0:
        sys.exit("--tokens, --lookups and --reps must be positive")
    node, hybridcache = node_probe.start(a.daemon)
    from hybridcache import cmd
    try:
        client = hybridcache.connect(socket=node.socket, timeout=600)
        s = node_probe.fill(hybridcache, client, "lookup", (a.lookups + 1) * a.tokens,
                            a.lookups, a.tokens)
        rnd = random.Random(1)  # the prompts fill() cached, drawn again
        prompts = [[rnd.randrange(1, 150000) for _ in range(a.tokens)] for _ in range(a.lookups)]
        steps = {form: [cmd.Lookup(tokens=p, without_indices=form) for p in prompts]
                 for form in (False, True)}
        for step in steps.values():  # not timed: the first steps' page faults on both sides
            for _ in range(3):
                s.step(step)
        times = {False: [], True: []}
        reads = {"list": [], "array": []}
        for _ in range(a.reps):
            for form, step in steps.items():
                t0 = time.perf_counter()
                r = s.step(step)
                times[form].append((time.perf_counter() - t0) * 1e6)
                if any(x.body.prefix_len != a.tokens for x in r):
                    sys.exit("a lookup did not find its whole cached prompt")
        for _ in range(a.reps):  # apart: the lists' half a million ints would slow the steps
            bodies = [x.body for x in s.step(steps[False])]
            t0 = time.perf_counter()
            lists = [b.indices for b in bodies]
            t1 = time.perf_counter()
            arrays = [b.indices_array for b in bodies]
            t2 = time.perf_counter()
            reads["list"].append((t1 - t0) * 1e6)
            reads["array"].append((t2 - t1) * 1e6)
            if any(len(ids) != a.tokens or ids != arr.tolist() for ids, arr in zip(lists, arrays)):
                sys.exit("a step's ids read differently as a list and as an array")

        def q(v, f):
            return round(sorted(v)[min(len(v) - 1, int(f * len(v)))], 1)

        print(json.dumps({
            "tokens": a.tokens, "lookups": a.lookups, "reps": a.reps,
            "with_indices_us": {"p50": round(statistics.median(times[False]), 1),
                                "p99": q(times[False], 0.99)},
            "without_indices_us": {"p50": round(statistics.median(times[True]), 1),
                                   "p99": q(times[True], 0.99)},
            "read_ids_us": {form: round(statistics.median(v), 1) for form, v in reads.items()},
        }))
    finally:
        node.stop()


if __name__ == "__main__":
    main()
