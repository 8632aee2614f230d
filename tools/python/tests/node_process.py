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

    def __init__(self, *extra_args, address_space_limit=None, shm_bytes=None, nofile_limit=None):
        """address_space_limit: bytes of virtual memory the daemon may map (RLIMIT_AS), so
        that an allocation past it fails in the daemon instead of succeeding. shm_bytes: the
        daemon runs in a mount namespace of its own whose /dev/shm is a tmpfs of that size
        (a container's /dev/shm; needs root: see can_limit_shm). nofile_limit: the file
        descriptors the daemon may have open (RLIMIT_NOFILE)."""
        self.dir = tempfile.mkdtemp(prefix="hc-py-")
        self.socket = os.path.join(self.dir, "node.sock")
        self.extra_args = list(extra_args)
        self.address_space_limit = address_space_limit
        self.shm_bytes = shm_bytes
        self.nofile_limit = nofile_limit
        self.proc = None
        self.log = open(os.path.join(self.dir, "log"), "a")
        self.start()

    def start(self):
        """Starts the daemon (again) on the same socket and data directory."""
        argv = [os.environ["HC_DAEMON"], "--socket", self.socket, "--metrics", "off",
                "--data-dir", os.path.join(self.dir, "data")] + self.extra_args
        if self.shm_bytes is not None:
            argv = _with_shm_of(self.shm_bytes, argv)
        self.proc = subprocess.Popen(
            argv,
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
        if self.nofile_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile_limit, self.nofile_limit))

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


def _with_shm_of(size, argv):
    """argv run in a new mount namespace whose /dev/shm is a tmpfs of `size` bytes."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs -o size="$0" tmpfs /dev/shm && exec "$@"', str(size)] + argv


def can_limit_shm():
    """Why NodeProcess(shm_bytes=...) cannot run here, or None when it can: it needs a
    mount namespace (root, and unshare(1) permitted by the container, if any)."""
    if os.geteuid() != 0:
        return "a private /dev/shm needs root (a mount namespace and a tmpfs mount)"
    try:
        r = subprocess.run(_with_shm_of(1 << 20, ["true"]), capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "unshare(1) is not usable here: " + str(e)
    if r.returncode != 0:
        return "this machine refuses a mount namespace: " + r.stderr.decode(errors="replace")
    return None
