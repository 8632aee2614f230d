"""hybridcached as a child process of a test: a private socket and data directory, stopped
with SIGTERM (a clean shutdown that flushes its L3 store) and restartable on the same
directory (a warm restart)."""

import atexit
import ctypes
import itertools
import os
import resource
import shlex
import shutil
import signal
import subprocess
import tempfile
import time


class NodeProcess:
    """hybridcached on a temporary socket and data directory."""

    def __init__(self, *extra_args, address_space_limit=None, shm_bytes=None, nofile_limit=None,
                 data_bytes=None, pid_namespace=False, memory_limit=None):
        """address_space_limit: bytes of virtual memory the daemon may map (RLIMIT_AS), so
        that an allocation past it fails in the daemon instead of succeeding. shm_bytes: the
        daemon runs in a mount namespace of its own whose /dev/shm is a tmpfs of that size
        (a container's /dev/shm; needs root: see can_mount_tmpfs). data_bytes: likewise,
        its data directory is a tmpfs of that size (a small disk). nofile_limit: the file
        descriptors the daemon may have open (RLIMIT_NOFILE). pid_namespace: the daemon runs
        as pid 1 of a PID namespace of its own, /dev/shm still shared (a container run with
        --ipc=host; needs root: see can_use_pid_namespace). memory_limit: the daemon runs in a
        memory cgroup of its own with that limit (a container's; needs root: see
        can_use_memory_cgroup)."""
        self.dir = tempfile.mkdtemp(prefix="hc-py-")
        self.socket = os.path.join(self.dir, "node.sock")
        self.data_dir = os.path.join(self.dir, "data")
        self.extra_args = list(extra_args)
        self.address_space_limit = address_space_limit
        self.mounts = []  # (path, tmpfs bytes)
        if shm_bytes is not None:
            self.mounts.append(("/dev/shm", shm_bytes))
        if data_bytes is not None:
            os.makedirs(self.data_dir, exist_ok=True)
            self.mounts.append((self.data_dir, data_bytes))
        self.nofile_limit = nofile_limit
        self.pid_namespace = pid_namespace
        self.cgroup = _make_memory_cgroup(memory_limit) if memory_limit is not None else None
        self.proc = None
        self.log = open(os.path.join(self.dir, "log"), "a")
        # No daemon outlives its test process: stopped at its exit if a test did not
        # (full ctest runs had left idle daemons behind), killed by the kernel if it dies.
        atexit.register(self.stop)
        self.start()

    def start(self):
        """Starts the daemon (again) on the same socket and data directory."""
        argv = [os.environ["HC_DAEMON"], "--socket", self.socket, "--metrics", "off",
                "--data-dir", self.data_dir] + self.extra_args
        if self.mounts:
            argv = _with_tmpfs(self.mounts, argv)
        if self.pid_namespace:
            argv = _in_pid_namespace(argv)
        if self.cgroup is not None:
            argv = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.cgroup] + argv
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
        # SIGTERM (a clean stop) when the test process dies without stopping it.
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
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
            if self.pid_namespace:
                # unshare(1) ignores SIGTERM while it waits: the daemon gets it directly.
                for pid in _children(self.proc.pid):
                    os.kill(pid, signal.SIGTERM)
            else:
                self.proc.terminate()
            self.proc.wait(timeout=60)

    def log_text(self):
        """What the daemon has logged so far."""
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        """Stops the daemon and removes its directory (again: nothing)."""
        self.halt()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.cgroup is not None:
            _remove_cgroup(self.cgroup)
            self.cgroup = None
        atexit.unregister(self.stop)


_PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def _with_tmpfs(mounts, argv):
    """argv run in a new mount namespace where each (path, bytes) of mounts is a tmpfs of
    that size."""
    script = "".join('mount -t tmpfs -o size=%d tmpfs %s && ' % (size, shlex.quote(path))
                     for path, size in mounts)
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            script + 'exec "$@"', "sh"] + argv


def _children(pid):
    """The pids of a process's children (in this PID namespace)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def _in_pid_namespace(argv):
    """argv run as pid 1 of a new PID namespace (killed if unshare(1) dies first)."""
    return ["unshare", "--pid", "--fork", "--kill-child"] + argv


_cgroup_count = itertools.count()


def _make_memory_cgroup(limit):
    """A new memory cgroup (its directory) limited to `limit` bytes: under cgroup v1's memory
    controller, else cgroup v2's root. OSError when neither takes it."""
    name = "hc-test-%d-%d" % (os.getpid(), next(_cgroup_count))
    # (hierarchy, a file only it has, the limit's file): v1's memory controller, v2's root.
    for parent, probe, limit_file in (
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.limit_in_bytes"),
            ("/sys/fs/cgroup", "cgroup.controllers", "memory.max")):
        if not os.path.exists(os.path.join(parent, probe)):
            continue
        path = os.path.join(parent, name)
        os.mkdir(path)
        try:
            with open(os.path.join(path, limit_file), "w") as f:
                f.write(str(limit))
        except OSError:
            _remove_cgroup(path)
            raise
        return path
    raise OSError("no memory cgroup controller under /sys/fs/cgroup")


def _remove_cgroup(path):
    """Removes an empty cgroup (its last process may take a moment to leave it)."""
    for _ in range(100):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def can_use_memory_cgroup():
    """Why NodeProcess(memory_limit=...) cannot run here, or None when it can."""
    if os.geteuid() != 0:
        return "a memory cgroup of its own needs root"
    try:
        _remove_cgroup(_make_memory_cgroup(1 << 30))
    except OSError as e:
        return "this machine gives no memory cgroup: " + str(e)
    return None


def _why_not_runs(argv, needs, what):
    """Why argv (a trial of a namespace) cannot run here, or None when it exits 0: not root
    (`needs` says what for), unshare(1) missing, or the machine refusing `what`."""
    if os.geteuid() != 0:
        return needs + " needs root"
    try:
        r = subprocess.run(argv, capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "unshare(1) is not usable here: " + str(e)
    if r.returncode != 0:
        return "this machine refuses " + what + ": " + r.stderr.decode(errors="replace")
    return None


def can_use_pid_namespace():
    """Why NodeProcess(pid_namespace=True) cannot run here, or None when it can."""
    return _why_not_runs(_in_pid_namespace(["sh", "-c", "test $$ = 1"]), "a PID namespace",
                         "a PID namespace")


def can_mount_tmpfs():
    """Why NodeProcess(shm_bytes=... or data_bytes=...) cannot run here, or None when it
    can: it needs a mount namespace (root, and unshare(1) permitted by the container, if
    any)."""
    return _why_not_runs(_with_tmpfs([("/dev/shm", 1 << 20)], ["true"]),
                         "a private /dev/shm or data disk (a mount namespace and a tmpfs mount)",
                         "a mount namespace")
