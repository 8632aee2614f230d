"""What the scripts that measure a running hybridcached from outside share
(bench_inspect_blocks.py, bench_kv_events_replay.py, bench_many_workers.py): a node of a given build on a private
socket (tools/python/tests/node_process.py), its RSS and CPU time, and an instance filled
with finished requests of random tokens through the Python package."""

import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build", "release")
DAEMON = os.path.join(BUILD, "actors/daemon/hybridcached")


def start(daemon, *args):
    """hybridcached `daemon` with `args`, and the package's module: (node, hybridcache).
    Exits saying why when the build is missing."""
    if not os.access(daemon, os.X_OK):
        sys.exit(f"{daemon}: not an executable (build the release preset first)")
    sys.path.insert(0, os.environ.get("HC_PYTHON_DIR", os.path.join(BUILD, "python")))
    sys.path.insert(0, os.path.join(ROOT, "tools/python/tests"))
    os.environ["HC_DAEMON"] = daemon
    import hybridcache
    from node_process import NodeProcess
    return NodeProcess(*args), hybridcache


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) // 1024


def cpu_s(pid):
    """User + system CPU seconds of the process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fill(hybridcache, client, model, kv_tokens, requests, tokens, page=1):
    """Opens an instance (`kv_tokens` tokens, page `page`) and caches `requests` finished
    requests of `tokens` random tokens each (seeded: the same on every build); returns the
    session."""
    from hybridcache import cmd
    spec = hybridcache.InstanceSpec()
    spec.model_id = model
    spec.page_size = page
    spec.kv_tokens = kv_tokens
    spec.ssm_slots = 64
    spec.request_rows = 8
    spec.ssm_slot_bytes = 64
    spec.kv_bytes_per_token = 8
    s = client.open(spec)
    rnd = random.Random(1)
    for i in range(requests):
        toks = [rnd.randrange(1, 150000) for _ in range(tokens)]
        r = s.step([cmd.Create(req=i + 1, tokens=toks), cmd.Match(req=i + 1),
                    cmd.AllocReq(req=i + 1), cmd.AllocKv(req=i + 1, to_end=True),
                    cmd.Finish(req=i + 1)])
        bad = [x.error for x in r if not x.ok]
        if bad:
            sys.exit(f"caching request {i + 1} failed: {bad}")
    return s
