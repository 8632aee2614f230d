"""hybridcached as a child process of a test: a private socket and data directory, stopped
with SIGTERM (a clean shutdown that flushes its L3 store) and restartable on the same
directory (a warm restart)."""

import os
import resource
import shutil
import subprocess
import tempfile
import time


class NodeProcess:
    """hybridcached on a temporary socket and data directory."""

    def __init__(self, *extra_args, address_space_limit=None):
        """address_space_limit: bytes of virtual memory the daemon may map (RLIMIT_AS), so
        that an allocation past it fails in the daemon instead of succeeding."""
        self.dir = tempfile.mkdtemp(prefix="hc-py-")
        self.socket = os.path.join(self.dir, "node.sock")
        self.extra_args = list(extra_args)
        self.address_space_limit = address_space_limit
        self.proc = None
        self.log = open(os.path.join(self.dir, "log"), "a")
        self.start()

    def start(self):
        """Starts the daemon (again) on the same socket and data directory."""
        self.proc = subprocess.Popen(
            [os.environ["HC_DAEMON"], "--socket", self.socket, "--metrics", "off",
             "--data-dir", os.path.join(self.dir, "data")] + self.extra_args,
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=self._limit)
        # Process start: a bounded wait for the socket (not a correctness timing).
        for _ in range(1200):
            if os.path.exists(self.socket):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("hybridcached did not start; log in " + self.log.name)

    def _limit(self):
        if self.address_space_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS,
                               (self.address_space_limit, self.address_space_limit))

    def alive(self):
        """Whether the daemon is still running."""
        return self.proc is not None and self.proc.poll() is None

    def halt(self):
        """Stops the daemon (SIGTERM, a clean shutdown), keeping its data directory."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)

    def stop(self):
        """Stops the daemon and removes its directory."""
        self.halt()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
