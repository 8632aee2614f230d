#!/usr/bin/python3
"""hcbench's 1K-64K x 100/1,000 tree matrix at SGLang's own statistic (issue 19).

SGLang's baseline (../shared/reference/sglang-baseline.md) gives, per call kind and shape,
the median over a few runs of each run's per-call median. This script measures the same:
each shape in a fresh hcbench process (so no row inherits another's heap), RUNS times,
shapes interleaved (a slow period of the host hits every row alike), and reads hcbench's
per-call p50_us counter. It prints a markdown table per call kind — the runs' medians, their
median, × SGLang's median, and for match the ratio to its memory floor (BM_MatchFloor,
measured in the same process right after it) — and a summary line per kind: how many of
the 16 rows are >= 100x SGLang or within 1.5x of the floor.

  /usr/bin/python3 scripts/bench_tree_matrix.py [--runs 5] [--pin] [--kinds match,insert]
      [--shapes 1:1024:100,...] [--bin build/release/tools/hcbench/hcbench] [--min-time 0.2]

--pin runs each process under `taskset -c <run % vCPUs>` (a single-threaded benchmark; this
VM's runs otherwise move between vCPUs). Progress goes to stderr, the tables to stdout.
"""

import argparse
import os
import re
import statistics
import subprocess
import sys

# SGLang's per-call medians in µs ("min / med" -> med) from sglang-baseline.md §3, its own
# code on this machine, allocator time included: (page, ctx, convs) -> (match_prefix, insert).
SGLANG_MEDIANS = {
    (1, 1024, 100): (47.4, 46.3), (1, 1024, 1000): (60.6, 48.0),
    (1, 4096, 100): (59.9, 54.9), (1, 4096, 1000): (66.1, 54.0),
    (1, 16384, 100): (90.7, 75.3), (1, 16384, 1000): (110, 88.9),
    (1, 65536, 100): (200, 190), (1, 65536, 1000): (281, 277),
    (64, 1024, 100): (59.9, 57.8), (64, 1024, 1000): (71.4, 62.0),
    (64, 4096, 100): (89.7, 81.8), (64, 4096, 1000): (102, 91.2),
    (64, 16384, 100): (114, 104), (64, 16384, 1000): (136, 118),
    (64, 65536, 100): (219, 212), (64, 65536, 1000): (280, 289),
}
SGLANG_MATCH = {shape: m for shape, (m, _) in SGLANG_MEDIANS.items()}
SGLANG_INSERT = {shape: i for shape, (_, i) in SGLANG_MEDIANS.items()}
SHAPES = sorted(SGLANG_MATCH)
# Per kind: the benchmarks run in one process, and the one whose p50 is the kind's figure.
KINDS = {
    "match": ("BM_(MatchPrefix|MatchFloor)", "BM_MatchPrefix", SGLANG_MATCH),
    "insert": ("BM_InsertLocked", "BM_InsertLocked", SGLANG_INSERT),
}
ROW = re.compile(r"^(BM_\w+)/ctx:(\d+)/convs:(\d+)/page:(\d+)/\S*\s.*?p50_us=([0-9.]+)")


def parse_shapes(text):
    """'page:ctx:convs,...' -> the shapes of the matrix named (all 16 when empty)."""
    if not text:
        return SHAPES
    shapes = []
    for item in text.split(","):
        parts = item.split(":")
        try:
            shape = tuple(int(x) for x in parts)
        except ValueError:
            shape = ()
        if len(shape) != 3 or shape not in SGLANG_MATCH:
            raise ValueError(f"--shapes: {item!r} is not page:ctx:convs of the matrix "
                             f"(page 1|64, ctx 1024|4096|16384|65536, convs 100|1000)")
        shapes.append(shape)
    return shapes


def run_shape(args, kind, shape, run, cpus):
    page, ctx, convs = shape
    pattern = f"{KINDS[kind][0]}/ctx:{ctx}/convs:{convs}/page:{page}/"
    cmd = [args.bin, f"--benchmark_filter={pattern}", f"--benchmark_min_time={args.min_time}"]
    if args.pin:
        cmd = ["taskset", "-c", str(cpus[run % len(cpus)])] + cmd
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: "
                           f"{proc.stderr.strip()[-500:]}")
    out = proc.stdout
    p50 = {}
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            p50[m.group(1)] = float(m.group(5))
    if KINDS[kind][1] not in p50:
        raise RuntimeError(f"no p50_us for {pattern} in:\n{out}")
    return p50


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per shape (default 5)")
    ap.add_argument("--pin", action="store_true", help="pin each process to one vCPU")
    ap.add_argument("--kinds", default="match,insert", help="match,insert (default both)")
    ap.add_argument("--bin", default="build/release/tools/hcbench/hcbench", help="hcbench")
    ap.add_argument("--min-time", default="0.2", help="--benchmark_min_time (default 0.2)")
    ap.add_argument("--shapes", default="", help="page:ctx:convs,... (default: all 16)")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    if args.runs < 1 or not kinds or any(k not in KINDS for k in kinds):
        ap.error("--runs >= 1; --kinds from: " + ",".join(KINDS))
    try:
        shapes = parse_shapes(args.shapes)
    except ValueError as e:
        ap.error(str(e))
    if not os.access(args.bin, os.X_OK):
        ap.error(f"{args.bin} is not an executable (build first: cmake --build --preset release)")
    cpus = sorted(os.sched_getaffinity(0))

    # results[kind][shape] = list of {benchmark: p50} per run
    results = {k: {s: [] for s in shapes} for k in kinds}
    total = args.runs * len(kinds) * len(shapes)
    done = 0
    for run in range(args.runs):
        for kind in kinds:
            for shape in shapes:
                try:
                    results[kind][shape].append(run_shape(args, kind, shape, run, cpus))
                except RuntimeError as e:
                    sys.exit(f"\nbench_tree_matrix: {e}")
                done += 1
                print(f"\r{done}/{total} processes", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)

    for kind in kinds:
        _, main_bm, sglang = KINDS[kind]
        floor = kind == "match"
        print(f"\n{kind} ({main_bm}, p50 per call in µs; {args.runs} runs"
              f"{', pinned' if args.pin else ''})\n")
        head = "| page | ctx | convs | SGLang med | p50 of each run | median | × SGLang |"
        head += " floor | ÷ floor |" if floor else ""
        print(head)
        print("|---:" * (head.count("|") - 1) + "|")
        met = 0
        for shape in shapes:
            page, ctx, convs = shape
            runs = [r[main_bm] for r in results[kind][shape]]
            med = statistics.median(runs)
            ratio = sglang[shape] / med
            row = (f"| {page} | {ctx // 1024}K | {convs:,} | {sglang[shape]} | "
                   f"{' / '.join(f'{x:.2f}' for x in runs)} | {med:.2f} | {ratio:.0f}× |")
            ok = ratio >= 100
            if floor:
                fmed = statistics.median(r["BM_MatchFloor"] for r in results[kind][shape])
                row += f" {fmed:.2f} | {med / fmed:.2f} |"
                ok = ok or med <= 1.5 * fmed
            met += ok
            print(row)
        what = "≥ 100× SGLang or ≤ 1.5× the floor" if floor else "≥ 100× SGLang"
        print(f"\n{kind}: {met} of {len(shapes)} rows {what}")


if __name__ == "__main__":
    main()
