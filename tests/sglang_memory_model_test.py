"""scripts/sglang_memory_model.py: on a bundled trace it prints hybridcache's figure (from
`hcctl replay --memory`) beside the model of SGLang's tree, whose in-use bytes cover at least
the two 8-byte arrays SGLang keeps per cached token (its array('q') key and its int64 KV
index tensor) — a model that lost objects would fall below — and the ratio between them;
beside it the issue's target (a tenth of the model) and the information an exact index
must hold (log2 of the trace generator's vocabulary, in bytes; none for a trace without
that generator); bad input is refused with a message, not a traceback.

Usage: /usr/bin/python3 tests/sglang_memory_model_test.py HCCTL"""

import gzip
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "sglang_memory_model.py")
TRACE = os.path.join(ROOT, "tests", "data", "conf_p1_pressure.jsonl.gz")
HCCTL = os.path.abspath(sys.argv[1]) if len(sys.argv) >= 2 else None


def run(*args):
    return subprocess.run(["/usr/bin/python3", SCRIPT, *args], capture_output=True, text=True,
                          timeout=300)


class SglangMemoryModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        probe = subprocess.run([HCCTL, "replay", "--memory", "--json", TRACE],
                               capture_output=True, text=True)
        if probe.returncode == 1 and "does not report its heap" in probe.stderr:
            raise unittest.SkipTest("hcctl cannot measure its heap in this build (a sanitizer "
                                    "build replaces malloc): " + probe.stderr.strip())
        probe.check_returncode()
        cls.ours = json.loads(probe.stdout)

    def test_prints_both_figures_and_their_ratio(self):
        r = run(TRACE, "--hcctl", HCCTL, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        ours = self.ours
        self.assertEqual(j["cached_tokens"], ours["cached_tokens"])
        self.assertEqual(j["tree_nodes"], ours["tree_nodes"])
        self.assertEqual(j["slot_nodes"], ours["slot_nodes"])
        self.assertAlmostEqual(j["hybridcache_growth_bytes_per_cached_token"],
                               ours["growth_bytes_per_cached_token"])
        model = j["sglang_model"]["in_use_bytes_per_cached_token"]
        self.assertGreaterEqual(model, 16.0, "the key array and the id tensor: 8 B a token each")
        self.assertLess(model, 16.0 + 64 * 1024 / (ours["cached_tokens"] / ours["tree_nodes"]),
                        "under 64 KiB of objects per node")
        self.assertAlmostEqual(j["ratio_in_use"],
                               ours["growth_bytes_per_cached_token"] / model, places=6)
        self.assertAlmostEqual(j["target_bytes_per_cached_token"], model / 10, places=9)
        with gzip.open(TRACE, "rt") as f:
            vocab = json.loads(f.readline())["tokens"]["vocab"]
        self.assertAlmostEqual(j["exact_floor_bytes_per_cached_token"], math.log2(vocab) / 8,
                               places=9)

    def test_the_text_report_names_both_sides(self):
        r = run(TRACE, "--hcctl", HCCTL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("hybridcache (hcctl replay --memory)", r.stdout)
        self.assertIn("SGLang's tree, modelled", r.stdout)
        self.assertIn("which an exact index must hold", r.stdout)

    def test_bad_input_is_refused_with_a_message(self):
        r = run(os.path.join(ROOT, "no-such-trace.jsonl"), "--hcctl", HCCTL)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no such file", r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        r = run(TRACE, "--hcctl", os.path.join(ROOT, "no-such-hcctl"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("is not an executable", r.stderr)
        r = run(os.path.join(ROOT, "README.md"), "--hcctl", HCCTL)  # not a trace
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("hcctl replay --memory failed", r.stderr)
        self.assertNotIn("Traceback", r.stderr)


class ExactFloor(unittest.TestCase):
    """The floor read from a trace's header, on headers written here."""

    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("sglang_memory_model", SCRIPT)
        cls.mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.mod)

    def floor_of(self, first_line, gz=False):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.jsonl.gz" if gz else "t.jsonl")
            with (gzip.open(path, "wt") if gz else open(path, "w")) as f:
                f.write(first_line + "\n")
            return self.mod.exact_floor_bytes_per_token(path)

    def test_uniform_tokens_carry_log2_vocab_bits(self):
        header = {"op": "config", "tokens": {"generator": "splitmix64-v1", "vocab": 65536}}
        self.assertEqual(self.floor_of(json.dumps(header)), 2.0)
        self.assertEqual(self.floor_of(json.dumps(header), gz=True), 2.0)

    def test_no_floor_without_that_generator(self):
        self.assertIsNone(self.floor_of(json.dumps({"op": "config"})))
        self.assertIsNone(self.floor_of(json.dumps(
            {"op": "config", "tokens": {"generator": "recorded", "vocab": 65536}})))
        self.assertIsNone(self.floor_of(json.dumps(
            {"op": "config", "tokens": {"generator": "splitmix64-v1", "vocab": "many"}})))
        self.assertIsNone(self.floor_of("not json"))
        self.assertIsNone(self.floor_of("[1, 2]"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[2:])
