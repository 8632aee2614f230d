"""hcctl top with host tiers: after an hcsim run whose small device pools push prefixes to the
host tier (backups, demotions, load-backs) and its L3 store (storage prefetch), `top --json`
carries the tiers' totals — each the sum over the instances of what `inspect` says, the L3
pages the store's — and its tier rates are their growth over the interval; the text view
shows the tiers' lines only where an instance has a host tier.

Usage: /usr/bin/python3 tests/top_tiers_test.py HYBRIDCACHED HCCTL HCSIM"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

DAEMON, HCCTL, HCSIM = ((os.path.abspath(p) for p in sys.argv[1:4]) if len(sys.argv) >= 4
                        else (None, None, None))
TIERS = {"backed_up_tokens": "backed_up_tokens", "loaded_back_tokens": "loaded_back_tokens",
         "demoted_tokens": "demoted_tokens", "host_evicted_tokens": "host_evicted_tokens",
         "host_evicted_slots": "host_evicted_slots"}
GAUGES = {"host_kv_tokens_capacity": "kv_capacity", "host_kv_tokens_free": "kv_available",
          "host_ssm_slots_capacity": "slot_capacity", "host_ssm_slots_free": "slot_available"}


@unittest.skipIf(DAEMON is None, "usage: top_tiers_test.py HYBRIDCACHED HCCTL HCSIM")
class TopTiersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="hc-top-")
        cls.sock = os.path.join(cls.tmp.name, "s")
        cls.log = open(os.path.join(cls.tmp.name, "log"), "w+")
        cls.node = subprocess.Popen([DAEMON, "--socket", cls.sock, "--metrics", "off",
                                     "--data-dir", os.path.join(cls.tmp.name, "data")],
                                    stdout=cls.log, stderr=cls.log)
        for _ in range(300):  # a hang guard, not a timing assertion
            cls.log.seek(0)
            if "hybridcached ready" in cls.log.read() or cls.node.poll() is not None:
                break
            time.sleep(0.05)

    @classmethod
    def tearDownClass(cls):
        cls.node.terminate()
        cls.node.wait(timeout=30)
        cls.log.close()
        cls.tmp.cleanup()

    def hcctl(self, *args):
        r = subprocess.run([HCCTL, "--socket", self.sock, *args], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def test_tier_figures_are_the_inspect_sums_and_their_rates_the_growth(self):
        before = self.hcctl("top", "--interval", "0.1", "--count", "1")
        self.assertNotIn("L2 backed-up tokens/s", before, "no host tier yet: no tier lines")
        sim = subprocess.run([HCSIM, "--socket", self.sock, "--ops", "6000", "--workers", "2",
                              "--strategy", "extra_buffer", "--seed", "5", "--json",
                              "--progress", "false", "--model", "top-tiers", "--host-ratio", "3",
                              "--prefetch", "--kv-tokens", "2048", "--slots", "32",
                              "--max-context", "1200", "--batch", "4"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(sim.returncode, 0, sim.stdout + sim.stderr)
        self.hcctl("--timeout", "60", "ping")
        rows = [json.loads(line) for line in
                self.hcctl("top", "--interval", "0.2", "--count", "2", "--json").splitlines()]
        doc = json.loads(self.hcctl("inspect", "--json"))
        self.assertEqual(len(rows), 2)
        for a, b in zip(rows, rows[1:]):
            for k, r in b["tier_rates"].items():
                want = max(0.0, b["tier_totals"][k] - a["tier_totals"][k]) / b["interval_s"]
                self.assertAlmostEqual(r, want, delta=1e-9 * max(1.0, want), msg=k)
        last = rows[-1]
        hosts = [i["tree"]["host"] for i in doc["instances"] if i["tree"]["host"]]
        self.assertEqual(last["host_gauges"]["host_tiers"], len(hosts))
        self.assertGreaterEqual(len(hosts), 1)
        # hcsim ended and the node answered a ping since: nothing moves between the two reads.
        for k, field in TIERS.items():
            self.assertEqual(last["tier_totals"][k], sum(h[field] for h in hosts), k)
        for k, field in GAUGES.items():
            self.assertEqual(last["host_gauges"][k], sum(h[field] for h in hosts), k)
        l3 = doc["host_storage"]["l3"]
        self.assertEqual(last["tier_totals"]["l3_pages_written"], l3["pages_written"])
        self.assertEqual(last["tier_totals"]["l3_pages_read"], l3["pages_read"])
        for k in ("backed_up_tokens", "demoted_tokens", "loaded_back_tokens", "l3_pages_written"):
            self.assertGreater(last["tier_totals"][k], 0, k + ": the run exercised the tiers")
        text = self.hcctl("top", "--interval", "0.1", "--count", "1")
        for label in ("L2 backed-up tokens/s", "L2 loaded-back tokens/s", "L3 pages read/s"):
            self.assertIn(label, text)
        self.assertRegex(text, r"L2 pools of %d host tiers?: KV tokens \d+ used of %d "
                         % (len(hosts), sum(h["kv_capacity"] for h in hosts)))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[4:])
