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
The node's L3 store is open to external clients (SGLang's HiCache storage backend,
`hybridcache.sglang`) through `Node.store(identity)`: values move through a shared-memory
arena (`Store.arena`), each byte crossing the process boundary once.

Errors are exceptions derived from `hybridcache.Error` (one class per error family);
every call releases the GIL while it waits and gives up after the connection's timeout
(`hybridcache.Timeout`; the call is cancelled and the connection stays usable). A
connection may be used from several threads: its calls are queued on the connection's own
I/O thread. A connection made with ``io_thread=False`` runs its calls on the thread that
made it instead — no hand-over to that thread and back per call — and only that thread
may use it.
"""

from __future__ import annotations

import json
import mmap
import numbers
import os
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union


def _native_import_error(cause: ImportError) -> str:
    """What to tell a user whose interpreter cannot load ``_native``: Python's own message
    for a module built for another interpreter is "cannot import name '_native' from
    partially initialized module ... (most likely due to a circular import)"."""
    import glob
    import os
    import sys
    import sysconfig

    here = os.path.dirname(os.path.abspath(__file__))
    built = sorted(os.path.basename(p) for p in glob.glob(os.path.join(here, "_native*.so")))
    wanted = "_native" + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")
    if built and wanted not in built:
        return (f"hybridcache's native module in {here} is built for another Python "
                f"({', '.join(built)}); this interpreter ({sys.executable}, Python "
                f"{sys.version.split()[0]}) loads {wanted}. Run with the interpreter it was "
                f"built for (Debian's /usr/bin/python3 by default), or build the package for "
                f"this one: cmake -DHC_PYTHON={sys.executable} (README, Python package)")
    return f"hybridcache's native module in {here} cannot be loaded: {cause}"


try:
    from . import _native
except ImportError as _cause:
    raise ImportError(_native_import_error(_cause)) from _cause
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
    Sidecar,
    StorePool,
    Strategy,
    Timeout,
    Unavailable,
    cmd,
    res,
)

#: This package's release ("0.1.0"): `hybridcached --version` names the node's.
__version__: str = _native.__version__


def _short_repr(value) -> str:
    """A field's value in a repr: a long list (a prompt's tokens, a match's ids) shows its
    first items and its length, long bytes (an IPC handle) their length."""
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return "[" + ", ".join(map(repr, value[:8])) + f", ... ({len(value)} items)]"
    if isinstance(value, (bytes, bytearray)) and len(value) > 16:
        return f"<{len(value)} bytes>"
    return repr(value)


def _give_reprs() -> None:
    """The native value classes (specs, commands, results, pool figures) print as
    ``Name(field=value, ...)`` with their fields in the binding's order, instead of
    ``<... object at 0x...>``: what a REPL, a log line or a failed assertion shows."""
    kinds = [(_native, ("InstanceSpec", "CommandResult", "PoolState", "PoolInfo", "PingReply",
                        "Sidecar"), ""),
             (_native.cmd, [n for n in dir(_native.cmd) if not n.startswith("_")], "cmd."),
             (_native.res, [n for n in dir(_native.res) if not n.startswith("_")], "res.")]
    for module, names, prefix in kinds:
        for name in names:
            cls = getattr(module, name)
            fields = tuple(k for k, v in vars(cls).items()  # not a list's NumPy copy
                           if isinstance(v, property) and not k.startswith("_")
                           and not k.endswith("_array"))

            def __repr__(self, _name=prefix + name, _fields=fields) -> str:
                return _name + "(" + ", ".join(
                    f"{f}={_short_repr(getattr(self, f))}" for f in _fields) + ")"

            cls.__repr__ = __repr__


_give_reprs()

__all__ = [
    "connect", "Node", "Session", "InstanceSpec", "Strategy", "CommandResult", "PoolState",
    "PoolInfo", "PingReply", "cmd", "res", "Error", "InvalidArgument", "InvalidConfig",
    "NotFound", "OutOfMemory", "Unavailable", "Timeout", "DEFAULT_SOCKET", "DEFAULT_PART_BYTES",
    "Store",
    "StorePool", "Sidecar", "ExistsReply", "Segment", "Entry", "copy_in", "copy_out",
]

#: A byte range of a Store's arena: (offset, length).
Segment = Tuple[int, int]
#: One value of a Store call: (key, segments); the value is the segments' concatenation.
Entry = Tuple[str, Sequence[Segment]]


def copy_in(buffer, offsets: Sequence[int], addresses: Sequence[int],
            lengths: Sequence[int]) -> None:
    """Copies ``lengths[i]`` bytes from raw address ``addresses[i]`` into
    ``buffer[offsets[i]:]`` for every i, with the GIL released.

    ``buffer`` is any writable, contiguous buffer (a Store's :attr:`Store.arena`); its ranges are
    checked (InvalidArgument). The addresses are the caller's promise, as with
    ``ctypes.memmove``: host-pool pointers from SGLang's ``get_page_buffer_meta`` or a
    tensor's ``data_ptr()``.
    """
    _native.copy_in(buffer, list(offsets), list(addresses), list(lengths))


def copy_out(buffer, offsets: Sequence[int], addresses: Sequence[int],
             lengths: Sequence[int]) -> None:
    """Copies ``buffer[offsets[i]:][:lengths[i]]`` to raw address ``addresses[i]`` for every
    i, with the GIL released (the mirror of :func:`copy_in`)."""
    _native.copy_out(buffer, list(offsets), list(addresses), list(lengths))


def _path_arg(value, what: str) -> str:
    """A path argument as ``str``: a str, bytes or ``os.PathLike`` (a ``pathlib.Path``)."""
    try:
        return os.fsdecode(value)
    except TypeError:
        raise TypeError(f"{what} must be a path (str, bytes or os.PathLike such as "
                        f"pathlib.Path), not {type(value).__name__}") from None


def _bytes_arg(data, what: str) -> bytes:
    """A bytes-like argument as ``bytes`` (bytes, bytearray, memoryview, a NumPy array):
    an int is not taken as a length of zeros, as ``bytes(n)`` would, nor a str encoded."""
    try:
        return bytes(memoryview(data))
    except TypeError:
        raise TypeError(f"{what} must be bytes-like (bytes, bytearray, memoryview, a NumPy "
                        f"array), not {type(data).__name__}") from None


def _entry_list(entries: Sequence[Entry]) -> list:
    """``entries`` as the binding takes them: a list of (key, list of segments)."""
    if isinstance(entries, (str, bytes)) or (
            isinstance(entries, tuple) and len(entries) == 2 and isinstance(entries[0], str)):
        raise TypeError("entries must be a sequence of (key, segments) entries, not one entry "
                        "or a key: wrap a single entry in a list, [(key, [(offset, length)])]")
    try:
        return [(k, list(segs)) for k, segs in entries]
    except (TypeError, ValueError) as e:
        raise TypeError("entries must be a sequence of (key, segments) pairs, each segment an "
                        f"(offset, length) pair of the arena: {e}") from None


def _map_shm(name: str, size: int) -> mmap.mmap:
    # POSIX shared memory is a file under /dev/shm: map it, nothing is copied.
    with open("/dev/shm" + name, "r+b") as f:
        return mmap.mmap(f.fileno(), size)

#: The socket a node listens on by default (hybridcached --socket).
DEFAULT_SOCKET = "/tmp/hybridcache.sock"
#: Store.set_from / get_into: the most bytes of one part (one call to the node); 0, the
#: default, moves a batch as one part. Parts let the copies between the caller's memory and
#: the arena overlap the node's work on the part before — which needs a core to spare: on
#: a 2-vCPU host, where two copies at once take as long as two in turn, parts measured no
#: faster (BENCHMARKS.md §7.1).
DEFAULT_PART_BYTES = 0


class _CudaArray:
    """A mapped CUDA pool as ``__cuda_array_interface__`` (what torch.as_tensor reads); the
    tensor keeps this object, and so the mapping, alive."""

    def __init__(self, mapping: "_native.CudaMapping"):
        self.mapping = mapping
        self.__cuda_array_interface__ = {
            "shape": (mapping.size,), "typestr": "|u1", "data": (mapping.ptr, False),
            "version": 2, "strides": None,
        }


class Session:
    """An open session on one cache instance: steps, forward fences, pool info.

    Closing it (``close()``, the end of a ``with`` block, or garbage collection) releases
    every request, lock and slot it holds on the node.
    """

    def __init__(self, native: _native.Session, model_id: str = ""):
        self._s = native
        self._model_id = model_id
        self._maps: Dict[str, mmap.mmap] = {}
        self._cuda_maps: Dict[bytes, _native.CudaMapping] = {}

    def __repr__(self) -> str:
        return (f"<hybridcache.Session of {self._model_id!r}"
                f"{', closed' if self.closed else ''}>")

    def _pool(self, name: str, size: int) -> memoryview:
        if not name:
            raise InvalidArgument("invalid_argument: this instance has no such pool bytes "
                                  "(kv_bytes_per_token / ssm_slot_bytes is 0)")
        m = self._maps.get(name)
        if m is None:
            m = _map_shm(name, size)
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

    def request_rows(self):
        """The session's request rows (``InstanceSpec.shared_rows``) as a NumPy int32 array
        of shape (request_rows + 1, max_context_len) over the node's shared memory: row r
        holds request r's KV ids (SGLang's req_to_token; row 0 unused). The node writes a
        row before the step that changed it returns; match / AllocKv / CacheUnfinished
        results then carry no index lists. Zero-copy."""
        import numpy  # not at module import: workers without NumPy can use the rest

        info = self.pools
        if not info.rows_shm:
            raise InvalidArgument("invalid_argument: this session's rows are not shared "
                                  "(open it with shared_rows = True and max_context_len > 0)")
        return numpy.frombuffer(self._pool(info.rows_shm, info.rows_bytes),
                                dtype=numpy.int32).reshape(-1, info.row_width)

    def token_arena(self):
        """The session's token arena (``InstanceSpec.shared_tokens``) as a writable NumPy
        int32 array over the node's shared memory. Write a prompt into it and send
        ``cmd.Create(req, at=offset, count=n)`` (or ``cmd.Append``): the node copies the range
        before the step runs, so the range may be reused once ``step`` returned. Zero-copy."""
        import numpy  # not at module import: workers without NumPy can use the rest

        info = self.pools
        if not info.tokens_shm:
            raise InvalidArgument("invalid_argument: this session has no token arena "
                                  "(open it with shared_tokens > 0)")
        return numpy.frombuffer(self._pool(info.tokens_shm, info.tokens_bytes), dtype=numpy.int32)

    def ssm_array(self):
        """The SSM pool as a NumPy array of shape (slots + 1, ssm_slot_bytes), dtype uint8,
        over the same memory (NumPy is imported on first use)."""
        import numpy  # not at module import: workers without NumPy can use the rest

        info = self.pools
        return numpy.frombuffer(self.ssm_pool(), dtype=numpy.uint8).reshape(
            -1, info.ssm_slot_bytes)

    def kv_tensor(self):
        """The instance's L1 KV pool as a torch ``uint8`` tensor of shape
        (tokens, kv_bytes_per_token) over the pool's memory, no copy: the shared memory
        (device 'cpu') or the node's GPU memory opened through CUDA IPC (device 'cuda',
        on ``cuda:<device_ordinal>``). View it as the model's dtype and layers as needed.
        Needs torch (imported on first use)."""
        info = self.pools
        return self._tensor(info.kv_shm, info.kv_ipc_handle, info.kv_bytes,
                            info.kv_bytes_per_token)

    def ssm_tensor(self):
        """The instance's L1 SSM pool as a torch ``uint8`` tensor of shape
        (slots + 1, ssm_slot_bytes), no copy (see :meth:`kv_tensor`)."""
        info = self.pools
        return self._tensor(info.ssm_shm, info.ssm_ipc_handle, info.ssm_bytes,
                            info.ssm_slot_bytes)

    def _tensor(self, shm: str, ipc_handle: bytes, size: int, row_bytes: int):
        import torch  # not at module import: workers without torch can use the rest

        if row_bytes == 0:
            raise InvalidArgument("invalid_argument: this instance has no such pool bytes "
                                  "(kv_bytes_per_token / ssm_slot_bytes is 0)")
        info = self.pools
        if info.device == "cpu":
            flat = torch.frombuffer(self._pool(shm, size), dtype=torch.uint8)
        else:
            key = bytes(ipc_handle)
            mapping = self._cuda_maps.get(key)
            if mapping is None:
                mapping = _native.map_cuda(info.device_ordinal, key, size)
                self._cuda_maps[key] = mapping
            flat = torch.as_tensor(_CudaArray(mapping), device=f"cuda:{info.device_ordinal}")
        return flat.view(-1, row_bytes)

    def step(self, commands: Sequence[object]) -> List[CommandResult]:
        """Runs one scheduling step: the commands in order, one result per command.

        A command's failure is in its result (``ok``, ``code``, ``error``); a step-level
        failure (limits, a closed session) raises.
        """
        return self._s.step(list(commands))

    def begin_forward(self, batch: int) -> int:
        """Waits until the ops queued for forward ``batch`` ran and this session's previous
        forward ended; returns the wait in ns. Call ``end_forward`` of a begun batch before
        beginning a later one: a connection makes one call at a time, so a begin waiting
        for an end could only time out — it raises InvalidArgument at once instead."""
        return self._s.begin_forward(batch)

    def end_forward(self, batch: int) -> None:
        """Reports that forward ``batch`` finished writing its KV and states."""
        self._s.end_forward(batch)

    @property
    def pools(self) -> PoolInfo:
        """The shared-memory names and sizes of the instance's L1 pools."""
        return self._s.pools()

    def read_slot(self, slot: int) -> bytes:
        """A copy of one SSM slot's bytes, over the wire (the mapped :meth:`ssm_slot` is
        the zero-copy way on the same machine)."""
        return self._s.read_slot(slot)

    def write_slot(self, slot: int, data: bytes) -> None:
        """Writes one SSM slot's bytes over the wire (``len(data)`` = ``ssm_slot_bytes``)."""
        self._s.write_slot(slot, _bytes_arg(data, "data"))

    def read_kv_page(self, page: int) -> bytes:
        """A copy of one KV page's bytes (page ``page`` = tokens ``page * P`` ...), over the
        wire."""
        return self._s.read_kv_page(page)

    def write_kv_page(self, page: int, data: bytes) -> None:
        """Writes one KV page's bytes over the wire."""
        self._s.write_kv_page(page, _bytes_arg(data, "data"))

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


class ExistsReply(NamedTuple):
    """What :meth:`Store.exists` answers."""

    #: The leading run of KV page keys present in the store.
    kv_hit_pages: int
    #: Every prefix length in pages that the sidecar pools can restore too, ascending
    #: (sparse for TRAILING_PAGES pools; TP ranks intersect these sets).
    restorable_pages: List[int]


class Store:
    """The node's L3 store under one identity (SGLang's HiCache storage surface).

    Values are byte strings under the caller's keys, in two pools (``StorePool.KV_PAGE``,
    ``StorePool.SSM_STATE``), kept apart from other identities and from the node's own
    keys. Bytes move through :attr:`arena`, node-owned shared memory mapped here: write a
    value's bytes into the arena and :meth:`set` it by segments, or :meth:`get` values
    into arena segments and read them there. The node owns eviction.

    A call that timed out may still touch its arena ranges on the node: close the store
    and open another rather than reuse them. Not for concurrent use of the same arena
    ranges from several threads (the caller owns the arena's layout).
    """

    def __init__(self, native: _native.Store, identity: str = ""):
        self._s = native
        self._identity = identity
        self._map: Optional[mmap.mmap] = _map_shm(native.arena_name, native.arena_bytes)

    def __repr__(self) -> str:
        return (f"<hybridcache.Store {self._identity!r}, arena of {self._s.arena_bytes} bytes"
                f"{', closed' if self.closed else ''}>")

    @property
    def arena(self) -> memoryview:
        """The arena, mapped (writable, zero-copy); stays valid after :meth:`close`."""
        if self._map is None:
            raise NotFound("not_found: this Store was closed")
        return memoryview(self._map)

    @property
    def arena_bytes(self) -> int:
        """The arena's size in bytes (hybridcached --store-arena-bytes)."""
        return self._s.arena_bytes

    @property
    def max_keys(self) -> int:
        """The most keys one :meth:`exists`, :meth:`get` or :meth:`set` takes (65536 on
        hybridcached; more is InvalidArgument); :meth:`set_from` / :meth:`get_into` cut
        their parts at it."""
        return self._s.max_keys

    def arena_array(self):
        """The arena as a NumPy uint8 array over the same memory (NumPy imported on use)."""
        import numpy

        return numpy.frombuffer(self.arena, dtype=numpy.uint8)

    def exists(self, kv_keys: Sequence[str],
               sidecars: Iterable[Sidecar] = ()) -> ExistsReply:
        """SGLang's ``batch_exists_v2``: the leading run of present KV page keys, and every
        prefix length the sidecar pools (e.g. ``Sidecar(StorePool.SSM_STATE, trailing=True,
        n=1)``: the SSM state stored under a page's key; with ``key_suffix="@r1"``, under the
        page's key + "@r1") allow to restore. A suffix that is not printable text of at most
        256 bytes raises InvalidArgument."""
        if isinstance(kv_keys, (str, bytes)):
            raise TypeError("kv_keys must be a sequence of keys, not one key: wrap it in a "
                            "list, [key] (a str would be read as keys of one character each)")
        hit, restorable = self._s.exists(list(kv_keys), list(sidecars))
        return ExistsReply(hit, list(restorable))

    def get(self, pool: StorePool, entries: Sequence[Entry]) -> List[bool]:
        """Reads each value into its arena segments; one bool per entry (False: missing,
        corrupt, or of another length than the segments). Bad segments raise
        InvalidArgument and nothing is read."""
        return self._s.get(pool, _entry_list(entries))

    def set(self, pool: StorePool, entries: Sequence[Entry]) -> List[bool]:
        """Writes each value from its arena segments (idempotent); one bool per entry."""
        return self._s.set(pool, _entry_list(entries))

    def set_from(self, pool: StorePool, entries: Sequence[Entry], addresses: Sequence[int],
                 part_bytes: int = DEFAULT_PART_BYTES) -> List[bool]:
        """:meth:`set` of values elsewhere in this process's memory: each segment's bytes
        are copied from ``addresses`` (one per segment, the entries' segments in order;
        e.g. ``tensor.data_ptr()``) to its arena range first. The batch goes in parts of at
        most ``part_bytes`` (a larger value alone; 0: no limit) and of at most
        :attr:`max_keys` values, and a part is copied while the node writes the one before
        (after it, if their arena ranges meet). Values may reuse arena space (e.g. all at
        offset 0): a value whose arena bytes are those of one already in the part starts a
        new part, so each moves with its own bytes.
        Addresses not one per segment, a segment outside the arena, a null address or two
        segments of one value overlapping in the arena raise InvalidArgument before
        anything is copied. One bool per entry; a part the node refuses raises its error,
        the parts before it set."""
        return self._s.set_from(pool, _entry_list(entries),
                                list(addresses), part_bytes)

    def get_into(self, pool: StorePool, entries: Sequence[Entry], addresses: Sequence[int],
                 part_bytes: int = DEFAULT_PART_BYTES) -> List[bool]:
        """:meth:`get`, then each present value's segments copied from the arena to
        ``addresses`` (as in :meth:`set_from`; a missing value's are not written), a part
        copied out while the node reads the next one. One bool per entry."""
        return self._s.get_into(pool, _entry_list(entries),
                                list(addresses), part_bytes)

    def clear(self) -> int:
        """Erases every value under this store's identity (both pools); returns how many."""
        return self._s.clear()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._s.closed

    def close(self) -> None:
        """Releases the store and its arena on the node (the local mapping stays until the
        last view of it goes)."""
        self._s.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Node:
    """A connection to a node (see :func:`connect`)."""

    def __init__(self, native: _native.Node, address: str = ""):
        self._native = native
        self._address = address

    def __repr__(self) -> str:
        return (f"<hybridcache.Node {self._address}"
                f"{' (closed)' if self._native is None else ''}>")

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

    def inspect(self, blocks: bool = False) -> dict:
        """Instances, trees and pools as one document (what ``hcctl inspect --json`` prints).
        Its ``"node"`` says which process serves: ``program``, ``version``, ``protocol``,
        ``pid``, ``started``, ``uptime_seconds``, ``settings`` (every setting it runs with, by
        name) and ``given`` (the names set on its command line or in its config file).
        With ``blocks``, also every device KV page of each instance (``tree["blocks"]``:
        hash, parent, checkpoint, namespace, as the KV events name them) — at most 500,000
        over all instances: past that :class:`OutOfMemory` (follow the KV events instead)."""
        return json.loads(self._n.inspect(blocks))

    def drain(self) -> None:
        """Returns once no tier work is in flight and every close received is done."""
        self._n.drain()

    def open(self, spec: InstanceSpec) -> Session:
        """Opens a session on the instance ``spec`` names (created on first use)."""
        return Session(self._n.open(spec), spec.model_id)

    def store(self, identity: str) -> Store:
        """Opens the node's L3 store under ``identity`` (1..256 printable characters: the
        model, rank coordinate and layout that keep two clients' values apart)."""
        return Store(self._n.store(identity), identity)

    def close(self) -> None:
        """Drops the connection (its sessions stay usable until they are closed)."""
        self._native = None

    def __enter__(self) -> "Node":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_TOKEN_BLANKS = " \t\r\n\v\f"


def connect(socket: Union[str, bytes, "os.PathLike[str]", None] = None,
            tcp: Optional[str] = None,
            token_file: Union[str, bytes, "os.PathLike[str]", None] = None,
            timeout: float = 30.0, io_thread: bool = True) -> Node:
    """Connects to a node.

    socket: the path of the node's Unix socket, a str or a ``pathlib.Path`` (default
        ``DEFAULT_SOCKET`` when neither it nor ``tcp`` is given; an empty path is refused).
    tcp: ``"host:port"`` of a node serving TCP; needs ``token_file`` (a path): the shared
        secret is its first line, without the spaces, tabs and CR around it (as the node
        reads it).
    timeout: seconds (a number) the connect and every call wait at most (raises
        ``Timeout``; the call is cancelled and the connection stays usable); must be > 0
        and at most a year (31,536,000 s); a fraction of a millisecond counts as one.
    io_thread: True (the default): the connection's calls run on an I/O thread of its own,
        so any thread may use it and its sessions and stores. False: calls run on the
        calling thread, which saves handing each call to that thread and back (two thread
        wake-ups, ~24 µs on a 2-vCPU VM: 5-36 % more calls per second for one worker there,
        up to 70 % for eight, BENCHMARKS.md §4.12), and only the thread that connected may
        use the connection, its sessions and stores (another thread's call raises
        InvalidArgument). For one connection per thread, as
        ``hybridcache.sglang`` keeps. What another thread drops is closed by the owning
        thread at its next call or when it ends; a connection dropped by another thread is
        shut down at once (the node releases its sessions and stores). In a forked child,
        the thread that forked cannot make one while it had some at the fork (Unavailable:
        their event loop is the parent's).
    Raises Unavailable when no node answers, InvalidArgument for bad arguments (a wrong
    secret: "login refused: wrong token"; a ``token_file`` whose first line is blank),
    TypeError for an argument of the wrong kind (a socket that is not a path, a timeout
    that is not a number), OSError when ``token_file`` cannot be read.
    """
    if socket is not None:
        socket = _path_arg(socket, "socket")
    if token_file is not None:
        token_file = _path_arg(token_file, "token_file")
    if tcp is not None and not isinstance(tcp, str):
        raise TypeError(f'tcp must be a str, "host:port", not {type(tcp).__name__}')
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    if socket is not None and tcp is not None:
        raise InvalidArgument("invalid_argument: give socket or tcp, not both")
    token = ""
    if tcp is not None:
        if token_file is None:
            raise InvalidArgument("invalid_argument: tcp needs token_file (the node's secret)")
        with open(token_file, "rb") as f:
            # The first line (up to a "\n") without the blanks around it, as the node reads
            # its own --token-file (cli/token_file.hpp): a CRLF file holds the same secret.
            token = f.readline().decode("utf-8").strip(_TOKEN_BLANKS)
        if not token:
            raise InvalidArgument(f"invalid_argument: token_file {token_file!r} holds no "
                                  "secret on its first line")
        address = tcp
    else:
        address = "unix:" + (DEFAULT_SOCKET if socket is None else socket)
    return Node(_native.Node(address, token, float(timeout), bool(io_thread)),
                address if tcp is None else "tcp:" + address)
