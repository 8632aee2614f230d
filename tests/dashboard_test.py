"""monitoring/grafana: the committed dashboard is what generate_dashboard.py writes, every
series a panel queries is one the node exports, every series the node exports is on a
panel and documented in the README, and every series the README documents is exported.
The exported set is read from a real hybridcached's /metrics after a short hcsim run with a
host tier (the pool gauges exist per cache instance, the host pools' per host-tier one).

Usage: /usr/bin/python3 tests/dashboard_test.py HYBRIDCACHED HCSIM"""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "monitoring", "grafana"))
import generate_dashboard  # noqa: E402

DAEMON, HCSIM = (os.path.abspath(p) for p in sys.argv[1:3]) if len(sys.argv) >= 3 else (None, None)
NAME = re.compile(r"\bhybridcache_[a-z0-9_]+")


def exported_families():
    """{family: type} from a fresh node's /metrics."""
    with tempfile.TemporaryDirectory(prefix="hc-dash-") as tmp, \
            tempfile.TemporaryFile() as log:
        node = subprocess.Popen([DAEMON, "--socket", os.path.join(tmp, "s"), "--data-dir",
                                 os.path.join(tmp, "data"), "--metrics", "127.0.0.1:0"],
                                stdout=log, stderr=log)
        try:
            url = None
            for _ in range(200):  # a hang guard, not a timing assertion
                log.seek(0)
                m = re.search(rb"metrics at (http://\S+/metrics)", log.read())
                if m:
                    url = m.group(1).decode()
                    break
                if node.poll() is not None:
                    break
                time.sleep(0.1)
            if url is None:
                log.seek(0)
                raise AssertionError("the node did not serve metrics:\n" + log.read().decode())
            # With a host tier, so that its pools' gauges exist too.
            sim = subprocess.run([HCSIM, "--socket", os.path.join(tmp, "s"), "--ops", "300",
                                  "--workers", "1", "--strategy", "extra_buffer", "--seed", "3",
                                  "--json", "--progress", "false", "--model", "dashboard",
                                  "--host-ratio", "3", "--kv-tokens", "4096", "--slots", "32",
                                  "--max-context", "1200", "--batch", "4"],
                                 capture_output=True, text=True, timeout=120)
            assert sim.returncode == 0, sim.stdout + sim.stderr
            text = urllib.request.urlopen(url, timeout=10).read().decode()
        finally:
            node.terminate()
            node.wait(timeout=30)
    # prometheus-cpp's own exposer_* families are not the node's.
    return {n: t for n, t in re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M)
            if n.startswith("hybridcache_")}


def family_of(name, families):
    """The family a sample name belongs to (histograms: _bucket / _sum / _count)."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and families.get(base) == "histogram":
            return base
    return name


@unittest.skipIf(DAEMON is None, "usage: dashboard_test.py HYBRIDCACHED HCSIM")
class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.families = exported_families()

    def test_the_committed_json_is_generated(self):
        with open(generate_dashboard.OUT, encoding="utf-8") as f:
            self.assertEqual(f.read(), generate_dashboard.render(),
                             "stale: run /usr/bin/python3 monitoring/grafana/generate_dashboard.py")

    def test_every_queried_series_is_exported_and_every_exported_one_is_shown(self):
        self.assertGreater(len(self.families), 10, self.families)
        shown = set()
        for q in generate_dashboard.queries():
            for name in NAME.findall(q):
                fam = family_of(name, self.families)
                self.assertIn(fam, self.families, f"panel query {q!r} reads {name}, not exported")
                shown.add(fam)
        self.assertEqual(set(self.families) - shown, set(), "exported but on no panel")

    def test_the_readme_documents_exactly_the_exported_series(self):
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            documented = {family_of(n, self.families) for n in NAME.findall(f.read())}
        self.assertEqual(documented - set(self.families), set(), "documented, not exported")
        self.assertEqual(set(self.families) - documented, set(), "exported, not documented")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:])
