"""Checks the include directions of tests/layering/directions.txt on the sources.

usage: check_layering.py ROOT [--graph]

Without --graph: exit 0 when every rule holds, 1 with one line per violation. With
--graph: print the folder edges found in the sources (with include counts), then check
that they form no cycle. Rules (directions.txt says them in full):
  - a file includes project headers only from its own folder or from the folders the
    matrix allows; the matrix itself has no cycle, so the closure of a file's includes
    stays inside the closure of its folder's row;
  - files of a pure folder include only standard-library headers and project headers;
  - a library's headers are reached, directly or through any chain of project headers,
    only from the files its rule allows (the chain is printed).
"""

import os
import re
import sys

PRODUCT_DIRS = ("actors", "schema", "storage", "gpu", "monitoring", "events", "tools")
SOURCE_EXT = (".hpp", ".cpp", ".cu", ".cuh", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
STD_HEADER = re.compile(r"^[a-z_0-9]+$")


def folder_of(path):
    parts = path.split("/")[:-1]
    depth = 2 if parts and parts[0] in ("actors", "schema", "tools") else 1
    return "/".join(parts[:depth])


def read_matrix(path):
    allowed, pure, libraries = {}, set(), []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("library "):
                name, rule = line[len("library "):].split(":", 1)
                inc, files = (p.strip() for p in rule.split(" | "))
                libraries.append((name.strip(), re.compile(inc), re.compile(files)))
                continue
            if ":" not in line:
                sys.exit(f"{path}:{n}: expected 'folder: deps...'")
            head, deps = line.split(":", 1)
            words = head.split()
            if words[0] == "pure":
                pure.add(words[1])
                words = words[1:]
            allowed[words[0]] = set(deps.split())
    return allowed, pure, libraries


def find_cycle(edges):
    """Returns one cycle of the directed graph as a list of nodes, or None."""
    color, stack = {}, []

    def visit(v):
        color[v] = 1
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if color.get(w) == 1:
                return stack[stack.index(w):] + [w]
            if color.get(w) is None:
                c = visit(w)
                if c:
                    return c
        stack.pop()
        color[v] = 2
        return None

    for v in sorted(edges):
        if color.get(v) is None:
            c = visit(v)
            if c:
                return c
    return None


def scan(root):
    files = {}
    for top in PRODUCT_DIRS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCE_EXT):
                    full = os.path.join(dirpath, name)
                    rel = os.path.relpath(full, root)
                    with open(full, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                    incs = []
                    for m in INCLUDE.finditer(text):
                        line = text.count("\n", 0, m.start()) + 1
                        incs.append((m.group(1) == "<", m.group(2), line))
                    files[rel] = incs
    return files


def resolve(files, rel, inc):
    """The project file an include names, or None for an external header."""
    if inc in files:
        return inc
    local = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
    return local if local in files else None


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = args[0] if args else "."
    matrix = os.path.join(os.path.dirname(os.path.abspath(__file__)), "directions.txt")
    allowed, pure, libraries = read_matrix(matrix)
    files = scan(root)
    problems = []

    cycle = find_cycle(allowed)
    if cycle:
        problems.append("the matrix has a cycle: " + " -> ".join(cycle))

    # Direct edges: folder rules and purity.
    project = {f: [] for f in files}  # file -> [(project header, line)]
    external = {f: [] for f in files}  # file -> [(header, line)]
    edges = {}
    for rel, incs in sorted(files.items()):
        src = folder_of(rel)
        if src not in allowed:
            problems.append(f"{rel}: folder '{src}' is not in {os.path.basename(matrix)}")
            continue
        for angle, inc, line in incs:
            target = None if angle else resolve(files, rel, inc)
            if target is None:
                external[rel].append((inc, line))
                if src in pure and not (angle and STD_HEADER.match(inc)):
                    problems.append(f"{rel}:{line}: includes <{inc}>, but '{src}' is pure "
                                    "(standard library only)")
                continue
            project[rel].append((target, line))
            dst = folder_of(target)
            if dst != src:
                edges.setdefault(src, {}).setdefault(dst, 0)
                edges[src][dst] += 1
                if dst not in allowed[src]:
                    problems.append(f"{rel}:{line}: includes \"{inc}\" ({src} -> {dst} is not "
                                    "an allowed direction)")

    # Transitive: libraries reached through chains of project headers.
    reach = {}  # header -> {external header: chain}

    def externals_of(f, seen):
        if f in reach:
            return reach[f]
        seen.add(f)
        out = {inc: [f] for inc, _ in external[f]}
        for h, _ in project[f]:
            if h in seen:
                continue
            for inc, chain in externals_of(h, seen).items():
                out.setdefault(inc, [f] + chain)
        reach[f] = out
        return out

    for rel in sorted(files):
        for inc, chain in sorted(externals_of(rel, set()).items()):
            for name, inc_re, file_re in libraries:
                if inc_re.search(inc) and not file_re.search(rel):
                    via = " -> ".join(chain[1:]) if len(chain) > 1 else "directly"
                    problems.append(f"{rel}: reaches {name} <{inc}> ({via}); allowed only in "
                                    f"files matching {file_re.pattern}")

    if "--graph" in argv:
        for src in sorted(edges):
            for dst, n in sorted(edges[src].items()):
                print(f"{src} -> {dst}  ({n})")
        c = find_cycle({s: set(d) for s, d in edges.items()})
        print("folder graph: " + ("cycle " + " -> ".join(c) if c else "no cycle"))
        if c:
            return 1
    for p in problems:
        print("layering: " + p)
    if problems:
        return 1
    print(f"layering: all rules hold ({len(files)} files, {len(allowed)} folders)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
