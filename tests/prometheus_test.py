"""A real Prometheus (Debian's prometheus) against a real hybridcached: it scrapes the node
on a loopback port while hcsim drives load (with a host tier), then through Prometheus's
HTTP API the target is up, every query of the Grafana dashboard returns data, and the
alert rules are loaded and evaluate without error. Also `promtool check metrics` on the
node's own /metrics text.

Usage: /usr/bin/python3 tests/prometheus_test.py HYBRIDCACHED HCSIM"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "monitoring", "grafana"))
import generate_dashboard  # noqa: E402

DAEMON, HCSIM = (os.path.abspath(p) for p in sys.argv[1:3]) if len(sys.argv) >= 3 else (None, None)
RULES = os.path.join(ROOT, "monitoring", "prometheus", "alerts.yml")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, pred, seconds=90):
    """Polls pred() (a hang guard, not a timing assertion); returns its last truthy value."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    raise AssertionError("gave up waiting for " + what)


def dashboard_query(q):
    """A panel's query as Grafana would send it with every job and node selected."""
    return (q.replace("$__rate_interval", "1m").replace('job=~"$job"', 'job=~".+"')
            .replace('instance=~"$instance"', 'instance=~".+"'))


@unittest.skipIf(DAEMON is None, "usage: prometheus_test.py HYBRIDCACHED HCSIM")
class PrometheusTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prom_bin = shutil.which("prometheus")
        if cls.prom_bin is None:
            raise AssertionError("prometheus is missing: bash scripts/install-deps.sh")
        cls.tmp = tempfile.mkdtemp(prefix="hc-prom-")
        cls.procs = []
        cls.node_log = open(os.path.join(cls.tmp, "node.log"), "w+b")
        node = subprocess.Popen([DAEMON, "--socket", os.path.join(cls.tmp, "s"), "--data-dir",
                                 os.path.join(cls.tmp, "data"), "--metrics", "127.0.0.1:0"],
                                stdout=cls.node_log, stderr=cls.node_log)
        cls.procs.append(node)

        def metrics_url():
            cls.node_log.seek(0)
            m = re.search(rb"metrics at (http://\S+/metrics)", cls.node_log.read())
            return m and m.group(1).decode()

        cls.metrics_url = wait_for("the node's metrics endpoint", metrics_url)
        target = urllib.parse.urlparse(cls.metrics_url).netloc
        cls.api = f"http://127.0.0.1:{free_port()}/api/v1/"
        config = os.path.join(cls.tmp, "prometheus.yml")
        with open(config, "w", encoding="utf-8") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {RULES}\n"
                    "scrape_configs:\n  - job_name: hybridcache\n    static_configs:\n"
                    f"      - targets: ['{target}']\n")
        cls.prom_log = open(os.path.join(cls.tmp, "prometheus.log"), "w+b")
        cls.procs.append(subprocess.Popen(
            [cls.prom_bin, f"--config.file={config}", f"--storage.tsdb.path={cls.tmp}/tsdb",
             f"--web.listen-address={urllib.parse.urlparse(cls.api).netloc}"],
            stdout=cls.prom_log, stderr=cls.prom_log))
        # Prometheus scrapes before the load starts (its discovery takes a few seconds), so
        # that rate() over the dashboard's windows sees the load, not one sample after it.
        def scraping():
            try:
                body = json.load(urllib.request.urlopen(
                    cls.api + "query?" + urllib.parse.urlencode({"query": 'up{job="hybridcache"}'}),
                    timeout=10))
            except OSError:
                return False
            return [s["value"][1] for s in body["data"]["result"]] == ["1"]

        wait_for("Prometheus scraping the node", scraping)
        # Load: two strategies, one instance with a host tier (its pools and tier series).
        for args in (["--strategy", "extra_buffer"], ["--strategy", "no_buffer", "--host-ratio", "3",
                                                      "--kv-tokens", "4096", "--slots", "32",
                                                      "--max-context", "1200", "--batch", "4"]):
            sim = subprocess.run([HCSIM, "--socket", os.path.join(cls.tmp, "s"), "--ops", "2000",
                                  "--workers", "2", "--seed", "5", "--json", "--progress", "false",
                                  "--model", "prom-" + args[1]] + args,
                                 capture_output=True, text=True, timeout=300)
            if sim.returncode != 0:
                raise AssertionError("hcsim failed: " + sim.stdout + sim.stderr)
        cls.loaded_at = time.time()

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            p.terminate()
        for p in cls.procs:
            p.wait(timeout=30)
        cls.node_log.close()
        cls.prom_log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def get(self, path, **params):
        url = self.api + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            body = json.load(urllib.request.urlopen(url, timeout=10))
        except OSError:
            return None  # Prometheus not up yet
        self.assertEqual(body.get("status"), "success", body)
        return body["data"]

    def query(self, q):
        data = self.get("query", query=q)
        return data["result"] if data else []

    def scraped_after_load(self):
        # Two scrapes after the load ended: rate() over a 1m window sees it.
        r = self.query('timestamp(hybridcache_sessions{job="hybridcache"})')
        return r and float(r[0]["value"][1]) > self.loaded_at + 2

    def test_the_target_is_up(self):
        wait_for("a scrape after the load", self.scraped_after_load)
        up = self.query('up{job="hybridcache"}')
        self.assertEqual([s["value"][1] for s in up], ["1"])

    def test_every_dashboard_query_returns_data(self):
        wait_for("a scrape after the load", self.scraped_after_load)
        empty = [q for q in generate_dashboard.queries() if not self.query(dashboard_query(q))]
        self.assertEqual(empty, [], "dashboard queries without data")
        hits = self.query('sum(hybridcache_hit_tokens_total{tier="l1", component="kv"})')
        self.assertGreater(float(hits[0]["value"][1]), 0, "hcsim's prefix hits are counted")

    def test_the_alert_rules_load_and_evaluate(self):
        def evaluated():
            data = self.get("rules")
            if not data:
                return None
            rules = [r for g in data["groups"] for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("2") and
                                          not r["lastEvaluation"].startswith("0001")
                                          for r in rules) else None
        rules = wait_for("every rule evaluated once", evaluated)
        with open(RULES, encoding="utf-8") as f:
            names = re.findall(r"^\s+- alert: (\S+)$", f.read(), re.M)
        self.assertEqual(sorted(r["name"] for r in rules), sorted(names))
        for r in rules:
            self.assertEqual(r["health"], "ok", r)
        firing = [a["labels"]["alertname"] for a in (self.get("alerts") or {"alerts": []})["alerts"]
                  if a["state"] == "firing"]
        self.assertEqual(firing, [], "a healthy node under load raises nothing")

    def test_promtool_accepts_the_metrics_text(self):
        text = urllib.request.urlopen(self.metrics_url, timeout=10).read()
        r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:])
