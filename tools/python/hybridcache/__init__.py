"""hybridcache: the Python client of a hybridcache node.

A node is the cache sidecar beside the inference workers (README.md). This package talks
to it over its Cap'n Proto protocol (version 2) through the C++ client::

    import hybridcache
    from hybridcache import cmd

    with hybridcache.connect(socket="/tmp/hybridcache.sock") as node:
        spec = hybridcache.InstanceSpec()
        spec.model_id, spec.kv_tokens, spec.ssm_slots = "my-model", 4096, 64
        with node.open(spec) as session:
            results = session.step([cmd.Create(req=1, tokens=[1, 2, 3]), cmd.Match(req=1)])
            print(results[1].body.prefix_len)

Commands are one class per kind (`hybridcache.cmd`), result bodies one class per kind
(`hybridcache.res`); a result's `body` is None for the kinds that only succeed or fail.
Errors are exceptions derived from `hybridcache.Error` (one class per error family);
every call releases the GIL while it waits and gives up after the connection's timeout
(`hybridcache.Timeout`). A connection may be used from several threads: its calls are
queued on the connection's own I/O thread.
"""

from __future__ import annotations

import json
import mmap
from typing import Dict, List, Optional, Sequence

from . import _native
from ._native import (  # noqa: F401  (re-exported)
    CommandResult,
    Error,
    InstanceSpec,
    InvalidArgument,
    InvalidConfig,
    NotFound,
    OutOfMemory,
    PingReply,
    PoolInfo,
    PoolState,
    Strategy,
    Timeout,
    Unavailable,
    cmd,
    res,
)

__all__ = [
    "connect", "Node", "Session", "InstanceSpec", "Strategy", "CommandResult", "PoolState",
    "PoolInfo", "PingReply", "cmd", "res", "Error", "InvalidArgument", "InvalidConfig",
    "NotFound", "OutOfMemory", "Unavailable", "Timeout", "DEFAULT_SOCKET",
]

#: The socket a node listens on by default (hybridcached --socket).
DEFAULT_SOCKET = "/tmp/hybridcache.sock"


class Session:
    """An open session on one cache instance: steps, forward fences, pool info.

    Closing it (``close()``, the end of a ``with`` block, or garbage collection) releases
    every request, lock and slot it holds on the node.
    """

    def __init__(self, native: _native.Session):
        self._s = native
        self._maps: Dict[str, mmap.mmap] = {}

    def _pool(self, name: str, size: int) -> memoryview:
        if not name:
            raise InvalidArgument("invalid_argument: this instance has no such pool bytes "
                                  "(kv_bytes_per_token / ssm_slot_bytes is 0)")
        m = self._maps.get(name)
        if m is None:
            # POSIX shared memory is a file under /dev/shm: map it, nothing is copied.
            with open("/dev/shm" + name, "r+b") as f:
                m = mmap.mmap(f.fileno(), size)
            self._maps[name] = m
        return memoryview(m)

    def kv_pool(self) -> memoryview:
        """The instance's L1 KV pool, mapped: token t's bytes are at
        ``t * kv_bytes_per_token`` (a page P tokens from ``page * P``). Zero-copy; the
        view stays valid after the session closes."""
        info = self.pools
        return self._pool(info.kv_shm, info.kv_bytes)

    def ssm_pool(self) -> memoryview:
        """The instance's L1 SSM pool, mapped: slot s's bytes are at ``s * ssm_slot_bytes``
        (slot 0 reserved). Zero-copy; the view stays valid after the session closes."""
        info = self.pools
        return self._pool(info.ssm_shm, info.ssm_bytes)

    def ssm_slot(self, slot: int) -> memoryview:
        """The bytes of one SSM slot (a view into :meth:`ssm_pool`)."""
        info = self.pools
        if slot <= 0 or (slot + 1) * info.ssm_slot_bytes > info.ssm_bytes:
            raise InvalidArgument(f"invalid_argument: slot {slot} is out of range")
        start = slot * info.ssm_slot_bytes
        return self.ssm_pool()[start:start + info.ssm_slot_bytes]

    def ssm_array(self):
        """The SSM pool as a NumPy array of shape (slots + 1, ssm_slot_bytes), dtype uint8,
        over the same memory (NumPy is imported on first use)."""
        import numpy  # not at module import: workers without NumPy can use the rest

        info = self.pools
        return numpy.frombuffer(self.ssm_pool(), dtype=numpy.uint8).reshape(
            -1, info.ssm_slot_bytes)

    def step(self, commands: Sequence[object]) -> List[CommandResult]:
        """Runs one scheduling step: the commands in order, one result per command.

        A command's failure is in its result (``ok``, ``code``, ``error``); a step-level
        failure (limits, a closed session) raises.
        """
        return self._s.step(list(commands))

    def begin_forward(self, batch: int) -> int:
        """Waits until the ops queued for forward ``batch`` ran; returns the wait in ns."""
        return self._s.begin_forward(batch)

    def end_forward(self, batch: int) -> None:
        """Reports that forward ``batch`` finished writing its KV and states."""
        self._s.end_forward(batch)

    @property
    def pools(self) -> PoolInfo:
        """The shared-memory names and sizes of the instance's L1 pools."""
        return self._s.pools()

    @property
    def closed(self) -> bool:
        return self._s.closed

    def close(self) -> None:
        """Closes the session; returns once its instance is idle on the node."""
        self._s.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        if not self.closed:
            self.close()


class Node:
    """A connection to a node (see :func:`connect`)."""

    def __init__(self, native: _native.Node):
        self._native = native

    @property
    def _n(self) -> _native.Node:
        if self._native is None:
            raise NotFound("not_found: this Node was closed")
        return self._native

    def ping(self) -> PingReply:
        """The node's protocol version and build; raises Unavailable when it is gone."""
        return self._n.ping()

    def stats(self) -> Dict[str, float]:
        """The node's totals (what ``hcctl stats`` prints), by name."""
        return dict(self._n.stats())

    def inspect(self) -> dict:
        """Instances, trees and pools as one document (what ``hcctl inspect --json`` prints)."""
        return json.loads(self._n.inspect())

    def drain(self) -> None:
        """Returns once no tier work is in flight and every close received is done."""
        self._n.drain()

    def open(self, spec: InstanceSpec) -> Session:
        """Opens a session on the instance ``spec`` names (created on first use)."""
        return Session(self._n.open(spec))

    def close(self) -> None:
        """Drops the connection (its sessions stay usable until they are closed)."""
        self._native = None

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(socket: Optional[str] = None, tcp: Optional[str] = None,
            token_file: Optional[str] = None, timeout: float = 30.0) -> Node:
    """Connects to a node.

    socket: the node's Unix socket (default ``DEFAULT_SOCKET`` when ``tcp`` is not given).
    tcp: ``"host:port"`` of a node serving TCP; needs ``token_file`` (the shared secret).
    timeout: seconds every call waits at most (raises ``Timeout``); must be > 0.
    Raises Unavailable when no node answers, InvalidArgument for bad arguments.
    """
    if socket is not None and tcp is not None:
        raise InvalidArgument("invalid_argument: give socket or tcp, not both")
    token = ""
    if tcp is not None:
        if token_file is None:
            raise InvalidArgument("invalid_argument: tcp needs token_file (the node's secret)")
        with open(token_file, encoding="utf-8") as f:
            token = f.read().strip()
        address = tcp
    else:
        address = "unix:" + (socket or DEFAULT_SOCKET)
    return Node(_native.Node(address, token, float(timeout)))
