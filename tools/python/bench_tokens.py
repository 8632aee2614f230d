#!/usr/bin/python3
"""What a command's tokens cost to take from Python: cmd.Create(req, tokens) timed for a
prompt given as a list, a NumPy int32 / int64 array and a torch int64 tensor (no node: the
conversion alone, which every Create / Append / Lookup pays before its step is sent).

Prints one line per prompt length, the best of --repeat runs in microseconds per command,
and checks that each form reads back as the same tokens (exits non-zero otherwise).

Usage (from the repository root, after the release build):
  PYTHONPATH=build/release/python /usr/bin/python3 tools/python/bench_tokens.py
"""

import argparse
import os
import sys
import timeit

# The script's folder holds the package's sources without the compiled module: the package
# comes from PYTHONPATH.
sys.path[0] = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tests")

import numpy  # noqa: E402

import hybridcache  # noqa: E402


def forms(n):
    """The prompt of n tokens in each form a caller may hold it in."""
    a32 = numpy.arange(n, dtype=numpy.int32) * 7 % 151_000
    out = {"list": a32.tolist(), "numpy int32": a32, "numpy int64": a32.astype(numpy.int64)}
    try:
        import torch
        out["torch int64"] = torch.from_numpy(out["numpy int64"])
    except ImportError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[4096, 16384, 65536])
    ap.add_argument("--repeat", type=int, default=5, help="runs of each form; the best is shown")
    args = ap.parse_args()
    for n in args.tokens:
        cells = []
        for name, value in forms(n).items():
            try:
                command = hybridcache.cmd.Create(1, value)
            except TypeError:  # a package from before it took this form
                cells.append(f"{name} refused")
                continue
            if command.tokens != [(i * 7) % 151_000 for i in range(n)]:
                sys.exit(f"{name}: {n} tokens read back differently")
            reps = max(5, min(10_000, 2_000_000 // max(n, 1)))
            best = min(timeit.repeat(lambda v=value: hybridcache.cmd.Create(1, v), number=reps,
                                     repeat=args.repeat)) / reps
            cells.append(f"{name} {best * 1e6:.1f} us")
        print(f"{n} tokens: " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
