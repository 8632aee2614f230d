"""deploy/: the systemd unit passes `systemd-analyze verify`, the Kubernetes manifest parses
and wires the sidecar as documented, and the way each of the three (unit, pod, Dockerfile)
starts and probes the node really works: its command line is run against the built
hybridcached (paths moved into a scratch directory) and its probe (`hcctl ping`) must
succeed, then SIGTERM must stop the node with status 0.

Usage: /usr/bin/python3 tests/deploy_test.py HYBRIDCACHED HCCTL"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPLOY = os.path.join(ROOT, "deploy")
DAEMON, HCCTL = (os.path.abspath(p) for p in sys.argv[1:3]) if len(sys.argv) >= 3 else (None, None)


def unit_lines(key):
    with open(os.path.join(DEPLOY, "hybridcached.service"), encoding="utf-8") as f:
        return [l.split("=", 1)[1].strip() for l in f if l.startswith(key + "=")]


class Scratch:
    """The paths the deployments use, moved under one temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="hc-deploy-")
        self.run = os.path.join(self.dir, "run")
        os.makedirs(self.run)
        self.paths = {
            "/etc/hybridcache/hybridcached.conf": os.path.join(DEPLOY, "hybridcached.conf.example"),
            "/run/hybridcache": self.run,
            "/var/lib/hybridcache": os.path.join(self.dir, "data"),
        }

    def move(self, arg):
        for old, new in self.paths.items():
            arg = arg.replace(old, new)
        return arg

    def tool(self, name):
        return {"hybridcached": DAEMON, "hcctl": HCCTL}.get(name, name)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def start_check_stop(test, argv, probe):
    """Starts the node with argv (metrics on a free port: several tests run at once), runs
    `probe` (a callable returning an exit status) until it succeeds, then stops the node."""
    with tempfile.TemporaryFile() as log:
        _run_node(test, argv, probe, log)


def _run_node(test, argv, probe, log):
    node = subprocess.Popen(argv + ["--metrics", "127.0.0.1:0"], stdout=log, stderr=log)
    try:
        ok = False
        for _ in range(200):  # the node starts within a second; 20 s is a hang guard
            if node.poll() is not None:
                break
            if probe() == 0:
                ok = True
                break
            time.sleep(0.1)
        log.seek(0)
        test.assertTrue(ok, "the probe never succeeded; node log:\n" + log.read().decode())
    finally:
        if node.poll() is None:
            node.send_signal(signal.SIGTERM)
        status = node.wait(timeout=30)
    test.assertEqual(status, 0, "SIGTERM must stop the node cleanly")


@unittest.skipIf(DAEMON is None, "usage: deploy_test.py HYBRIDCACHED HCCTL")
class DeployTest(unittest.TestCase):
    def setUp(self):
        self.scratch = Scratch()
        self.addCleanup(self.scratch.close)

    def test_the_unit_verifies_and_its_commands_run(self):
        analyze = shutil.which("systemd-analyze")
        self.assertIsNotNone(analyze, "systemd-analyze is missing: bash scripts/install-deps.sh")
        r = subprocess.run([analyze, "verify", os.path.join(DEPLOY, "hybridcached.service")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout + r.stderr, "", "no warning either")
        (start,) = unit_lines("ExecStart")
        (post,) = unit_lines("ExecStartPost")
        argv = [self.scratch.move(a) for a in shlex.split(start)]
        self.assertEqual(argv[:2], ["/usr/bin/env", "hybridcached"])
        argv = [DAEMON] + argv[2:]
        # ExecStartPost is `/bin/sh -c '...'` with systemd's $$ for a literal $.
        sh = shlex.split(post)
        self.assertEqual(sh[:2], ["/bin/sh", "-c"])
        script = self.scratch.move(sh[2].replace("$$", "$"))
        env = dict(os.environ, PATH=os.path.dirname(HCCTL) + os.pathsep + os.environ["PATH"])
        start_check_stop(self, argv, lambda: subprocess.run(["/bin/sh", "-c", script], env=env).returncode)
        for key in ("RuntimeDirectory", "StateDirectory"):
            self.assertEqual(unit_lines(key), ["hybridcache"], key + " backs the paths ExecStart uses")

    def test_the_pod_shares_socket_and_shm_and_probes_with_ping(self):
        with open(os.path.join(DEPLOY, "kubernetes", "pod.yaml"), encoding="utf-8") as f:
            docs = list(yaml.safe_load_all(f))
        kinds = [d["kind"] for d in docs]
        self.assertEqual(kinds, ["PersistentVolumeClaim", "Pod"])
        pod = docs[1]["spec"]
        node = next(c for c in pod["containers"] if c["name"] == "hybridcache")
        worker = next(c for c in pod["containers"] if c["name"] != "hybridcache")
        mounts = lambda c: {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
        for shared in ("socket", "shm"):
            self.assertEqual(mounts(node)[shared], mounts(worker)[shared], shared + " is shared")
        self.assertEqual(mounts(node)["shm"], "/dev/shm")
        volumes = {v["name"]: v for v in pod["volumes"]}
        self.assertEqual(volumes["shm"]["emptyDir"].get("medium"), "Memory")
        self.assertEqual(volumes["l3"]["persistentVolumeClaim"]["claimName"],
                         docs[0]["metadata"]["name"])
        socket = next(a.split("=", 1)[1] for a in node["args"] if a.startswith("--socket="))
        self.assertTrue(socket.startswith(mounts(node)["socket"] + "/"))
        probes = [node[p]["exec"]["command"] for p in ("startupProbe", "readinessProbe", "livenessProbe")]
        for name, p in zip(("startupProbe", "readinessProbe", "livenessProbe"), probes):
            self.assertEqual(p, ["hcctl", "--socket", socket, "--timeout", "2", "ping"])
            # hcctl gives up (and says why) before the kubelet kills it (its default: 1 s)
            self.assertLess(float(p[p.index("--timeout") + 1]), node[name].get("timeoutSeconds", 1),
                            name + ": hcctl's --timeout must be under the probe's")
        argv = [DAEMON] + [self.scratch.move(a) for a in node["args"] if not a.startswith("--metrics")]
        probe = [HCCTL] + [self.scratch.move(a) for a in probes[0][1:]]
        start_check_stop(self, argv, lambda: subprocess.run(probe, capture_output=True).returncode)

    def test_the_image_entrypoint_and_healthcheck_run(self):
        with open(os.path.join(DEPLOY, "Dockerfile"), encoding="utf-8") as f:
            text = f.read().replace("\\\n", " ")
        lines = [l.strip() for l in text.splitlines()]
        entry = json.loads(next(l for l in lines if l.startswith("ENTRYPOINT "))[len("ENTRYPOINT "):])
        health = next(l for l in lines if l.startswith("HEALTHCHECK "))
        check = json.loads(health[health.index("CMD ") + 4:])
        self.assertEqual(entry[0], "hybridcached")
        self.assertEqual(check[0], "hcctl")
        probe_timeout = re.search(r"--timeout=(\d+)s", health)
        self.assertIsNotNone(probe_timeout, "the HEALTHCHECK sets its timeout")
        self.assertLess(float(check[check.index("--timeout") + 1]), float(probe_timeout.group(1)),
                        "hcctl's --timeout must be under the HEALTHCHECK's")
        argv = [DAEMON] + [self.scratch.move(a) for a in entry[1:]]
        i = argv.index("--metrics")  # 0.0.0.0:9464 in the image; a free loopback port here
        del argv[i:i + 2]
        probe = [HCCTL] + [self.scratch.move(a) for a in check[1:]]
        start_check_stop(self, argv, lambda: subprocess.run(probe, capture_output=True).returncode)
        # What the build stage installs is what the runtime stage copies and runs.
        self.assertIn("--target hybridcached hcctl", text)
        self.assertIn("HC_DEPS=build bash scripts/install-deps.sh", text)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:])
