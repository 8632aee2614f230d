#!/usr/bin/python3
"""Damages a stopped node's data directory the way a failing disk, a bad copy or a cleanup
script would, for tools/crash_test.sh (HC_CRASH_DAMAGE): one damage per call, drawn from
SEED, to one file drawn from every file under DIR (the L3 store's value segments, its RocksDB
index files, and a directory an earlier start moved aside):

  flip      1-64 bytes at a random offset, each with one bit inverted
  zero      1-64 bytes at a random offset set to zero
  truncate  the file cut to a random length (0 included)
  delete    the file removed
  append    1-4999 random bytes added at its end
  scatter   every value segment: one bit inverted in every 4 KiB (most values read back are
            damaged; the chosen file does not matter)

Prints one line saying what it did. Never touches RocksDB's LOCK file (a lock, not data).
Run it only while no node uses DIR.

Usage: damage_data_dir.py DIR SEED
"""

import os
import random
import sys

KINDS = ["flip", "flip", "flip", "zero", "truncate", "delete", "append", "scatter"]


def files_under(root):
    out = []
    for parent, _, names in os.walk(root):
        for name in names:
            path = os.path.join(parent, name)
            if name != "LOCK" and os.path.isfile(path) and not os.path.islink(path):
                out.append(path)
    return sorted(out)


def scatter(files, rnd):
    segments = [f for f in files if f.endswith(".seg")]
    flipped = 0
    for path in segments:
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            for at in range(rnd.randrange(0, 4096), size, 4096):
                f.seek(at)
                byte = f.read(1)[0]
                f.seek(at)
                f.write(bytes([byte ^ (1 << rnd.randrange(8))]))
                flipped += 1
    return f"scatter: {flipped} bytes of {len(segments)} value segments"


def damage(root, rnd):
    files = files_under(root)
    if not files:
        return "nothing to damage"
    path = rnd.choice(files)
    name = os.path.relpath(path, root)
    size = os.path.getsize(path)
    kind = rnd.choice(KINDS)
    if kind == "scatter":
        return scatter(files, rnd)
    if kind == "delete":
        os.remove(path)
        return f"delete {name} ({size} B)"
    if kind == "truncate":
        length = rnd.randrange(0, size + 1)
        os.truncate(path, length)
        return f"truncate {name} from {size} to {length} B"
    if kind == "append":
        extra = rnd.randrange(1, 5000)
        with open(path, "ab") as f:
            f.write(rnd.randbytes(extra))
        return f"append {extra} B to {name} ({size} B)"
    if size == 0:
        return f"{kind}: {name} is empty, left as it was"
    at = rnd.randrange(0, size)
    count = min(rnd.randrange(1, 65), size - at)
    with open(path, "r+b") as f:
        f.seek(at)
        old = f.read(count)
        f.seek(at)
        f.write(bytes(count) if kind == "zero" else
                bytes(b ^ (1 << rnd.randrange(8)) for b in old))
    return f"{kind} {count} B at {at} of {name} ({size} B)"


def main(argv):
    if len(argv) != 3 or not argv[2].isdigit() or not os.path.isdir(argv[1]):
        print("usage: damage_data_dir.py DIR SEED (an existing directory, a whole number)",
              file=sys.stderr)
        return 2
    print(damage(argv[1], random.Random(int(argv[2]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
