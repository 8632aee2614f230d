"""SGLang HiCache storage backend on a hybridcache node (``HybridCacheStorage``).

SGLang loads it through its ``dynamic`` storage backend, with no change to SGLang::

    python -m sglang.launch_server ... --enable-hierarchical-cache \\
        --hicache-mem-layout page_first_direct --hicache-storage-backend dynamic \\
        --hicache-storage-backend-extra-config '{"backend_name": "hybridcache",
            "module_path": "hybridcache.sglang", "class_name": "HybridCacheStorage",
            "interface_v1": 1, "socket": "/tmp/hybridcache.sock"}'

SGLang's controller then calls this class from its prefetch, I/O and backup threads
(reference/integration.md §0: the calls SGLang at d72314808 makes, in order). For hybrid
models (KV + Mamba host pools in a ``HostPoolGroup``) that is ``batch_exists_v2`` for the
hit query, ``batch_set_v2`` / ``batch_get_v2`` for the Mamba state of a node and
``batch_set_v1`` / ``batch_get_v1`` (``interface_v1``) or ``batch_set`` / ``batch_get``
(without it) for the KV pages.

Each thread that calls connects on its first call (its own connection, Store and arena;
its calls run on it, ``io_thread=False``); the link is closed when the thread ends — on
that thread, so a pool's ended threads leave nothing open on the node — and every live
one at ``close()``. A forked child leaves its parent's connections alone and connects again
on its first call (the forking thread's link on an I/O thread: its own event loop is the
parent's).

Data path: a page crosses the process boundary once each way. Setting, its bytes are
copied from SGLang's host pool (the pointers of ``get_page_buffer_meta``, or the flat page
tensor of the v0 calls) into this thread's Store arena, node-owned shared memory, and the
node writes them from there to its L3 store. Getting, the node reads them into the arena and
they are copied from there into the host pool. A value is the page's bytes as
``get_data_page(flat=True)`` has them (K then V), so v0 and v1 share values; a Mamba state
is one value of its temporal and conv buffers in ``get_page_buffer_meta`` order. The copies
and the node's call are one native call per batch (``Store.set_from`` / ``get_into``); with
``part_bytes`` a batch moves in parts, one part's copy running while the node reads or
writes the part before.

Keys: SGLang's 64-hex page hashes, namespaced by the Store identity this class derives from
``HiCacheStorageConfig`` (model, TP/PP/CP coordinate or MLA, host layout) plus the optional
``namespace`` option. The node owns L3 eviction; ``set`` of a present key is idempotent.

Fail fast: every call waits at most ``timeout`` seconds. When the node is down or slow, the
calls return misses / False (the failure logged once per outage) and the backend reconnects
by itself, at most every ``reconnect_interval`` seconds, once the node is back. ``get_stats``
is local (never an RPC). torch is not imported by this module: tensors are used through
their own methods (``data_ptr``, ``tolist``).

Not supported: SGLang's ``tp_lcm_size`` (KV heads split so that ranks of other TP sizes share
values; logged at construction): values are kept per TP size.

Extra-config options (everything else SGLang leaves in ``extra_config`` is ignored; unknown
keys are logged once):

========================  =====================  ============================================
option                    default                meaning
========================  =====================  ============================================
``socket``                /tmp/hybridcache.sock  the node's Unix socket
``tcp``                   (none)                 ``host:port`` of a node serving TCP instead
``token_file``            (none)                 the TCP secret (required with ``tcp``, only
                                                 with it)
``timeout``               2.0                    seconds a call waits at most
``reconnect_interval``    1.0                    seconds between reconnect attempts
``namespace``             (none)                 added to the identity (keeps deployments apart)
``part_bytes``            0 (one part)           a batch moves in parts of at most this many
                                                 bytes, each part's copy overlapping the node's
                                                 work on the one before (for hosts with cores
                                                 to spare; e.g. 4194304)
========================  =====================  ============================================

A value of the wrong kind (a word for a number, a fraction of a byte, ``socket`` and ``tcp``
both) is refused at construction with a ``ValueError`` naming the option, rather than
answering misses later; a null value is the default.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import hybridcache as _hc

logger = logging.getLogger(__name__)

try:  # SGLang's base class and result type when SGLang is installed (its dynamic factory
    # checks the subclass); stand-ins with the same names and fields otherwise.
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _Base
except ImportError:  # pragma: no cover - exercised when SGLang is absent (the test suite)

    class _Base:  # type: ignore[no-redef]
        """Stand-in for sglang.srt.mem_cache.hicache_storage.HiCacheStorage."""


def _find_result_type():
    for module in ("sglang.srt.mem_cache.hicache_storage", "sglang.srt.mem_cache.pool_transfer"):
        try:
            mod = __import__(module, fromlist=["PoolTransferResult"])
            return getattr(mod, "PoolTransferResult")
        except (ImportError, AttributeError):
            continue

    @dataclasses.dataclass
    class PoolTransferResult:
        """Stand-in for SGLang's PoolTransferResult (the newer form, with the restorable set)."""

        kv_hit_pages: int
        extra_pool_hit_pages: Dict[str, int]
        restorable_prefix_pages: Optional[List[int]] = None

    return PoolTransferResult


PoolTransferResult = _find_result_type()
_RESULT_HAS_RESTORABLE = any(
    f.name == "restorable_prefix_pages" for f in dataclasses.fields(PoolTransferResult))

KV = "kv"
MAMBA = "mamba"
_TRAILING = "trailing_pages"

_OPTIONS = {"socket", "tcp", "token_file", "timeout", "reconnect_interval", "namespace",
            "part_bytes"}
# Keys SGLang leaves in extra_config for every dynamic backend (integration.md §1.1).
_SGLANG_KEYS = {"backend_name", "module_path", "class_name", "interface_v1", "fault_tolerance"}


def _text_option(extra: dict, key: str, empty_is_none: bool = False) -> Optional[str]:
    """An extra-config option that is a string (None when absent or null)."""
    value = extra.get(key)
    if value is None or (empty_is_none and value == ""):
        return None
    if not isinstance(value, str) or not value:
        what = "a string" if empty_is_none else "a non-empty string"
        raise ValueError(f"hybridcache: extra-config option {key} must be {what}, not {value!r}")
    return value


def _seconds_option(extra: dict, key: str, default: float) -> float:
    """An extra-config option that is seconds: a number (or a string of one) from 0 to a
    year; null or absent: the default. NaN and infinities (Python's json reads both) are
    refused."""
    value = extra.get(key)
    if value is None:
        value = default
    seconds = float("nan")  # refused below unless value reads as a number
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except ValueError:
            pass
    # (NaN fails every comparison: "not ... <=" refuses it, as it refuses infinities.)
    if not 0 <= seconds <= 31_536_000:
        raise ValueError(f"hybridcache: extra-config option {key} must be a number of seconds "
                         f"from 0 to a year (31536000), not {value!r}")
    return seconds


def _bytes_option(extra: dict, key: str, default: int) -> int:
    """An extra-config option that is a whole number of bytes >= 0 (or a string of digits);
    null or absent: the default."""
    value = extra.get(key)
    if value is None:
        value = default
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"hybridcache: extra-config option {key} must be a whole number of bytes "
                     f">= 0, not {value!r}")


def _name(x: Any) -> str:
    """A PoolName (a str Enum) or a plain string, as its value."""
    return str(getattr(x, "value", x))


def _raw(t: Any) -> Tuple[int, int, Any]:
    """(address, bytes, keep-alive) of a tensor / NumPy array / writable buffer's memory."""
    if hasattr(t, "data_ptr"):  # torch.Tensor
        if not t.is_contiguous():
            raise _hc.InvalidArgument("invalid_argument: a non-contiguous tensor")
        if t.device.type != "cpu":
            raise _hc.InvalidArgument(f"invalid_argument: a tensor on {t.device} (host only)")
        return t.data_ptr(), t.numel() * t.element_size(), t
    if hasattr(t, "__array_interface__"):  # NumPy
        if not t.flags["C_CONTIGUOUS"]:
            raise _hc.InvalidArgument("invalid_argument: a non-contiguous array")
        return t.__array_interface__["data"][0], t.nbytes, t
    raise _hc.InvalidArgument(f"invalid_argument: cannot address a {type(t).__name__}")


@dataclasses.dataclass
class StorageStats:
    """Local counters of a backend (what ``get_stats`` returns; never an RPC).

    The four lists have the fields of SGLang's ``StorageMetrics`` (pages and bytes/s of each
    KV prefetch / backup batch since the previous ``get_stats``, which empties them); the
    totals count since start.
    """

    prefetch_pgs: List[int] = dataclasses.field(default_factory=list)
    backup_pgs: List[int] = dataclasses.field(default_factory=list)
    prefetch_bandwidth: List[float] = dataclasses.field(default_factory=list)
    backup_bandwidth: List[float] = dataclasses.field(default_factory=list)
    exists_calls: int = 0
    pages_hit: int = 0
    pages_set: int = 0
    pages_got: int = 0
    states_set: int = 0
    states_got: int = 0
    bytes_set: int = 0
    bytes_got: int = 0
    failed_calls: int = 0
    reconnects: int = 0


class _Link:
    """One thread's connection, Store and arena (a thread never shares its arena)."""

    def __init__(self, node: _hc.Node, store: _hc.Store):
        self.node = node
        self.store = store
        self.arena = store.arena
        self.arena_bytes = store.arena_bytes
        # The process that made it: a forked child's copy is the parent's connection (its
        # socket and arena), which the child must neither use nor close.
        self.pid = os.getpid()

    def drop(self) -> None:
        if self.pid != os.getpid():
            return  # the parent's: left alone (the native objects abandon it in a child)
        try:
            self.store.close()
        except _hc.Error:
            pass
        self.node.close()


# Every live backend, for the fork hook below.
_BACKENDS: "weakref.WeakSet[HybridCacheStorage]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child gets fresh locks: a parent's thread may have held one at the fork,
    and no thread of the child would ever release it."""
    for backend in list(_BACKENDS):
        backend._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


class HybridCacheStorage(_Base):
    """SGLang's HiCache storage backend (``HiCacheStorage``) on a hybridcache node.

    Constructed by SGLang's dynamic factory as ``HybridCacheStorage(storage_config,
    kwargs)``; see the module documentation for the options and the data path.
    """

    def __init__(self, storage_config: Any = None, kwargs: Optional[dict] = None):
        """Reads the options from ``storage_config.extra_config``; connects lazily (the
        first call of each thread), so a node that is not up yet is not an error here."""
        self.storage_config = storage_config
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        extra.update(kwargs or {})
        unknown = sorted(set(extra) - _OPTIONS - _SGLANG_KEYS)
        if unknown:
            logger.warning("hybridcache: ignoring unknown extra-config keys %s", unknown)
        self._socket = _text_option(extra, "socket")
        self._tcp = _text_option(extra, "tcp")
        self._token_file = _text_option(extra, "token_file")
        if self._socket is not None and self._tcp is not None:
            raise ValueError("hybridcache: give the socket option or tcp, not both")
        if self._tcp is not None and self._token_file is None:
            raise ValueError("hybridcache: the tcp option needs token_file (the node's secret)")
        if self._tcp is None and self._token_file is not None:
            raise ValueError("hybridcache: token_file is the secret of a tcp node; give tcp too "
                             "(a Unix socket needs none)")
        self._timeout = _seconds_option(extra, "timeout", 2.0)
        self._retry = _seconds_option(extra, "reconnect_interval", 1.0)
        if self._timeout == 0:
            raise ValueError("hybridcache: extra-config option timeout must be > 0")
        self._namespace: Optional[str] = _text_option(extra, "namespace", empty_is_none=True)
        self._part_bytes = _bytes_option(extra, "part_bytes", _hc.DEFAULT_PART_BYTES)
        if getattr(storage_config, "should_split_heads", False):
            logger.warning(
                "hybridcache: tp_lcm_size (KV heads split for ranks of other TP sizes) is not "
                "supported; values are kept per TP size, so ranks of another TP size miss them")
        self._is_mla = bool(getattr(storage_config, "is_mla_model", False))
        self._tp = (int(getattr(storage_config, "tp_rank", 0)),
                    int(getattr(storage_config, "tp_size", 1)))

        self.mem_pool_host: Any = None
        self.registered_pools: Dict[str, Any] = {}
        self._kv_pool: Any = None
        self._identity: Optional[str] = None

        self._lock = threading.Lock()
        self._local = threading.local()
        # Every thread's live link, for close(). Weak: a link belongs to its thread's
        # self._local, so when the thread ends its link goes with it, there (its connection
        # closes on the thread that made it) — a pool's ended threads leave no Store open.
        self._links: weakref.WeakSet[_Link] = weakref.WeakSet()
        self._down_logged = False
        self._closed = False
        self.stats = StorageStats()
        _BACKENDS.add(self)

    # ---- registration (SGLang: the group first, then each pool through v2) ---------------

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """The KV anchor pool, or SGLang's ``HostPoolGroup`` (whose entries are registered
        by name as well)."""
        with self._lock:
            self.mem_pool_host = mem_pool_host
            entries = getattr(mem_pool_host, "entries", None)
            if entries is not None:
                for entry in entries:
                    self.registered_pools.setdefault(_name(entry.name), entry.host_pool)
                anchor = getattr(mem_pool_host, "anchor_entry", None) or entries[0]
                self._kv_pool = anchor.host_pool
            else:
                self._kv_pool = mem_pool_host
                self.registered_pools.setdefault(KV, mem_pool_host)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        """A host pool by name (``kv``, ``mamba``, ...); any order, repeated, also after the
        storage threads started."""
        name = _name(host_pool_name)
        with self._lock:
            self.registered_pools[name] = host_pool
            if name == KV and self._kv_pool is None:
                self._kv_pool = host_pool

    # ---- the connection of the calling thread ---------------------------------------------

    def _identity_now(self) -> str:
        if self._identity is None:
            cfg = self.storage_config
            model = str(getattr(cfg, "model_name", None) or "default")
            parts = ["sglang", model, "mla" if self._is_mla else f"tp{self._tp[0]}of{self._tp[1]}"]
            for what, rank, size in (("pp", "pp_rank", "pp_size"),
                                     ("cp", "attn_cp_rank", "attn_cp_size")):
                if int(getattr(cfg, size, 1) or 1) > 1:
                    parts.append(f"{what}{int(getattr(cfg, rank, 0))}of{int(getattr(cfg, size))}")
            layout = getattr(self._kv_pool, "layout", None)
            if layout is None:
                layout = "page_first" if getattr(cfg, "is_page_first_layout", False) else "other"
            parts.append(str(layout))
            if self._namespace:
                parts.append("ns=" + str(self._namespace))
            self._identity = "/".join(parts)
        return self._identity

    def _link(self):
        link = getattr(self._local, "link", None)
        if link is not None:
            if link.pid == os.getpid():
                return link
            # A forked child (a thread of SGLang's forks with its parent's links): the link
            # is the parent's. This thread connects again on an I/O thread of its own, as its
            # io_thread=False connections' event loop is the parent's (a new thread of the
            # child could use its own; this one cannot).
            self._local.link = None
            self._local.retry_at = 0.0
            self._local.io_thread = True
        if self._closed:
            return None
        if time.monotonic() < getattr(self._local, "retry_at", 0.0):
            return None
        try:
            # One connection per thread, so its calls run on this thread (no hand-over).
            node = _hc.connect(socket=self._socket, tcp=self._tcp, token_file=self._token_file,
                               timeout=self._timeout,
                               io_thread=getattr(self._local, "io_thread", False))
            try:
                link = _Link(node, node.store(self._identity_now()))
            except BaseException:
                node.close()
                raise
        except (_hc.Error, OSError) as e:
            self._local.retry_at = time.monotonic() + self._retry
            self._note_down(e)
            return None
        with self._lock:
            self._links.add(link)
            if self._down_logged:
                self._down_logged = False
                self.stats.reconnects += 1
                logger.info("hybridcache: connected to the node again")
        self._local.link = link
        return link

    def _note_down(self, e: BaseException) -> None:
        with self._lock:
            self.stats.failed_calls += 1
            first = not self._down_logged
            self._down_logged = True
        if first and isinstance(e, _hc.InvalidConfig):  # a setting of the node (--l3 false)
            logger.warning("hybridcache: the node refuses a store (%s); answering misses",
                           e)
        elif first:
            logger.warning("hybridcache: node unavailable (%s); answering misses until it is "
                           "back", e)

    def _fail(self, link: _Link, e: BaseException) -> None:
        """A call failed: an unreachable or slow node drops the thread's link (its arena
        may still be in use on the node); other errors are logged and counted."""
        if isinstance(e, (_hc.Unavailable, _hc.Timeout, _hc.NotFound)):
            self._local.link = None
            self._local.retry_at = time.monotonic() + self._retry
            with self._lock:
                self._links.discard(link)
            link.drop()
            self._note_down(e)
        else:
            with self._lock:
                self.stats.failed_calls += 1
            logger.error("hybridcache: %s", e)

    def _key_suffix(self, pool: str) -> str:
        """What a value's key adds to its page key: an MLA model's ranks share KV pages (one
        identity for all), but each holds its own TP shard of the Mamba state."""
        if pool == MAMBA and self._is_mla:
            return f"@tp{self._tp[0]}of{self._tp[1]}"
        return ""

    # ---- moving values: lists of (address, length) segments per value --------------------

    def _chunks(self, link: _Link, values: Sequence[Sequence[Tuple[int, int]]]):
        """Index ranges of values whose bytes fit the arena together (a value larger than
        the arena is a range of one, refused by the caller)."""
        start, used = 0, 0
        for i, segs in enumerate(values):
            size = sum(n for _, n in segs)
            if i > start and used + size > link.arena_bytes:
                yield start, i
                start, used = i, 0
            used += size
        if start < len(values):
            yield start, len(values)

    def _count(self, pool: str, fetch: bool, values, ok: List[bool], seconds: float) -> None:
        pages = sum(ok)
        nbytes = sum(sum(n for _, n in v) for v, good in zip(values, ok) if good)
        with self._lock:
            s = self.stats
            if pool == MAMBA:
                if fetch:
                    s.states_got += pages
                else:
                    s.states_set += pages
            elif fetch:
                s.pages_got += pages
                s.prefetch_pgs.append(pages)
                s.prefetch_bandwidth.append(nbytes / seconds if seconds > 0 else 0.0)
            else:
                s.pages_set += pages
                s.backup_pgs.append(pages)
                s.backup_bandwidth.append(nbytes / seconds if seconds > 0 else 0.0)
            if fetch:
                s.bytes_got += nbytes
            else:
                s.bytes_set += nbytes

    def _move(self, pool: str, keys: Sequence[str],
              values: Sequence[Sequence[Tuple[int, int]]], fetch: bool) -> List[bool]:
        """Sets (host memory -> arena -> L3) or fetches (L3 -> arena -> host memory) values
        given as (address, length) segments; one bool per value."""
        t0 = time.perf_counter()
        link = self._link()
        if link is None:
            return [False] * len(keys)
        which = _hc.StorePool.SSM_STATE if pool == MAMBA else _hc.StorePool.KV_PAGE
        suffix = self._key_suffix(pool)
        ok: List[bool] = []
        for lo, hi in self._chunks(link, values):
            entries, addresses, at = [], [], 0  # values one after another in the arena
            for i in range(lo, hi):
                segs = []
                for address, n in values[i]:
                    segs.append((at, n))
                    addresses.append(address)
                    at += n
                entries.append((keys[i] + suffix, segs))
            if at > link.arena_bytes:
                ok.extend([False] * (hi - lo))
                continue
            try:  # the copies and the call in one (in parts with part_bytes)
                if fetch:
                    got = link.store.get_into(which, entries, addresses, self._part_bytes)
                else:
                    got = link.store.set_from(which, entries, addresses, self._part_bytes)
            except _hc.Error as e:
                self._fail(link, e)
                return ok + [False] * (len(keys) - len(ok))
            ok.extend(got)
        self._count(pool, fetch, values, ok, time.perf_counter() - t0)
        return ok

    def _segments(self, pool: Any, n: int, host_indices: Any) -> List[List[Tuple[int, int]]]:
        """Each of the n values' (address, length) segments in the host pool, from SGLang's
        ``get_page_buffer_meta``: MHA pages K then V (per layer for layer_first, reordered so
        that a value is the flat data page), a Mamba slot its temporal and conv buffers."""
        page = int(getattr(pool, "page_size", 1) or 1)
        if n == 0:
            return []
        if len(host_indices) < n * page:  # else fewer pages' pointers, split among the keys
            raise _hc.InvalidArgument(
                f"invalid_argument: {len(host_indices)} host indices for {n} values of "
                f"{page} slots each")
        indices = host_indices[: n * page]
        ptrs, sizes = pool.get_page_buffer_meta(indices)
        per = len(ptrs) // n
        if per * n != len(ptrs):
            raise _hc.InvalidArgument(
                f"invalid_argument: {len(ptrs)} buffer pointers for {n} values")
        out = []
        for i in range(n):
            segs = list(zip(ptrs[i * per:(i + 1) * per], sizes[i * per:(i + 1) * per]))
            if per > 2 and per % 2 == 0 and not self._is_mla and _name(getattr(
                    pool, "layout", "")) == "layer_first":
                segs = segs[0::2] + segs[1::2]  # (K, V) per layer -> all K, then all V
            out.append([(int(a), int(b)) for a, b in segs])
        return out

    def _pool(self, name: str) -> Any:
        with self._lock:
            pool = self.registered_pools.get(name)
            if pool is None and name == KV:
                pool = self._kv_pool
        return pool

    # ---- existence ---------------------------------------------------------------------------

    def _exists(self, keys: Sequence[str], sidecars: Sequence[_hc.Sidecar]):
        link = self._link()
        if link is None:
            return None
        try:
            reply = link.store.exists(list(keys), list(sidecars))
        except _hc.Error as e:
            self._fail(link, e)
            return None
        with self._lock:
            self.stats.exists_calls += 1
        return reply

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """The number of leading keys present (SGLang's KV-only hit query)."""
        reply = self._exists(keys, ())
        hit = reply.kv_hit_pages if reply is not None else 0
        with self._lock:
            self.stats.pages_hit += hit
        return hit

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None):
        """The hit query with sidecar pools: ``kv_hit_pages`` is already the deepest prefix
        every pool can restore (for Mamba, TRAILING_PAGES: a page holding a state), as
        SGLang at d72314808 expects; ``restorable_prefix_pages`` (newer SGLang) lists every
        restorable length."""
        sidecars, names, supported = [], [], True
        for t in pool_transfers or []:
            name = _name(t.name)
            if name == KV:
                continue
            names.append(name)
            if name != MAMBA:
                supported = False  # only KV pages and Mamba states are stored here
                continue
            trailing = _name(getattr(t, "hit_policy", _TRAILING)) == _TRAILING
            sidecars.append(_hc.Sidecar(_hc.StorePool.SSM_STATE, trailing,
                                        max(1, len(t.keys or ())), self._key_suffix(MAMBA)))
        reply = self._exists(keys, sidecars) if supported else None
        if reply is None:
            hit, restorable = 0, []
        elif sidecars:
            restorable = list(reply.restorable_pages)
            hit = restorable[-1] if restorable else 0
        else:
            hit = reply.kv_hit_pages
            restorable = list(range(1, hit + 1))
        with self._lock:
            self.stats.pages_hit += hit
        extra = {name: hit for name in names}
        if _RESULT_HAS_RESTORABLE:
            return PoolTransferResult(kv_hit_pages=hit, extra_pool_hit_pages=extra,
                                      restorable_prefix_pages=restorable)
        return PoolTransferResult(kv_hit_pages=hit, extra_pool_hit_pages=extra)

    def exists(self, key: str) -> bool:
        """Whether one KV page key is present."""
        return self.batch_exists([key]) == 1

    # ---- v1: zero-copy pages through get_page_buffer_meta ---------------------------------

    def _kv_values(self, keys: Sequence[str], host_indices: Any):
        pool = self._pool(KV)
        if pool is None:
            logger.error("hybridcache: no KV host pool registered")
            return None
        try:
            return self._segments(pool, len(keys), host_indices)
        except Exception as e:  # a pool that cannot give pointers: misses, never a raise
            logger.error("hybridcache: KV page pointers: %s", e)
            return None

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Writes KV pages from the host pool (page i at ``host_indices[i * page_size]``)."""
        values = self._kv_values(keys, host_indices)
        return [False] * len(keys) if values is None else self._move(KV, keys, values, fetch=False)

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Reads KV pages into the host pool; one bool per page."""
        values = self._kv_values(keys, host_indices)
        return [False] * len(keys) if values is None else self._move(KV, keys, values, fetch=True)

    # ---- v2: per-pool transfers -------------------------------------------------------------

    def _transfers(self, transfers: List[Any], fetch: bool) -> Dict[str, List[bool]]:
        out: Dict[str, List[bool]] = {}
        for t in transfers or []:
            name = _name(t.name)
            keys = list(t.keys or ())
            pool = self._pool(name)
            if name not in (KV, MAMBA) or pool is None or t.host_indices is None:
                logger.error("hybridcache: cannot %s pool %r (%s)", "read" if fetch else "write",
                             name, "not registered" if pool is None else "not stored here")
                out[name] = [False] * len(keys)
                continue
            try:
                values = self._segments(pool, len(keys), t.host_indices)
            except Exception as e:  # a pool that cannot give pointers: False, never a raise
                logger.error("hybridcache: %s pointers: %s", name, e)
                out[name] = [False] * len(keys)
                continue
            out[name] = self._move(name, keys, values, fetch)
        return out

    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[str, List[bool]]:
        """Writes each transfer's values (``keys[i]`` from ``host_indices[i * page_size]`` of
        the pool it names); a Mamba slot is one value of several segments."""
        return self._transfers(transfers, fetch=False)

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[str, List[bool]]:
        """Reads each transfer's values into its pool; per-pool bool lists."""
        return self._transfers(transfers, fetch=True)

    # ---- v0: flat page tensors ----------------------------------------------------------------

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        """Writes flat pages (``values``: tensors, or addresses ``target_locations`` with
        ``target_sizes``); True when every page was written."""
        try:
            if values is not None:
                raws = [_raw(v if v.is_contiguous() else v.contiguous())
                        if hasattr(v, "is_contiguous") else _raw(v) for v in values]
                segs = [[(a, n)] for a, n, _ in raws]
            elif target_locations is not None and target_sizes is not None:
                segs = [[(int(a), int(n))] for a, n in zip(target_locations, target_sizes)]
            else:
                raise _hc.InvalidArgument("invalid_argument: batch_set needs values")
        except _hc.Error as e:
            logger.error("hybridcache: %s", e)
            return False
        return len(keys) == len(segs) and all(self._move(KV, keys, segs, fetch=False))

    def batch_get(self, keys: List[str], target_locations: Any = None,
                  target_sizes: Any = None) -> List[Any]:
        """Reads flat pages into ``target_locations`` (tensors; fresh dummy pages from the
        KV pool if absent); the tensor for a page read, None for a miss."""
        try:
            if target_locations is None:
                pool = self._pool(KV)
                if pool is None:
                    raise _hc.InvalidArgument("invalid_argument: no KV host pool registered")
                target_locations = [pool.get_dummy_flat_data_page() for _ in keys]
            elif len(target_locations) != len(keys):
                raise _hc.InvalidArgument(
                    f"invalid_argument: batch_get of {len(keys)} keys into "
                    f"{len(target_locations)} target pages")
            raws = [_raw(t) for t in target_locations]
        except _hc.Error as e:
            logger.error("hybridcache: %s", e)
            return [None] * len(keys)
        ok = self._move(KV, keys, [[(a, n)] for a, n, _ in raws], fetch=True)
        return [t if good else None for t, good in zip(target_locations, ok)]

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        """One flat page (see batch_get); None if absent."""
        return self.batch_get([key], None if target_location is None else [target_location])[0]

    def set(self, key: str, value: Any = None, target_location: Any = None,
            target_sizes: Any = None) -> bool:
        """One flat page (see batch_set); idempotent."""
        if value is not None:
            return self.batch_set([key], [value])
        return self.batch_set([key], None, [target_location], [target_sizes])

    # ---- admin --------------------------------------------------------------------------------

    def clear(self) -> None:
        """Removes every value under this backend's identity from the node's L3 store."""
        link = self._link()
        if link is None:
            logger.error("hybridcache: clear: the node is unavailable")
            return
        try:
            removed = link.store.clear()
        except _hc.Error as e:
            self._fail(link, e)
            return
        logger.info("hybridcache: cleared %d values of %s", removed, self._identity_now())

    def get_stats(self) -> StorageStats:
        """The local counters (never an RPC); the per-batch lists restart empty."""
        with self._lock:
            out = self.stats
            self.stats = dataclasses.replace(out, prefetch_pgs=[], backup_pgs=[],
                                             prefetch_bandwidth=[], backup_bandwidth=[])
            return out

    def close(self) -> None:
        """Drops every thread's connection; later calls answer misses."""
        with self._lock:
            self._closed = True
            links, self._links = list(self._links), weakref.WeakSet()
        for link in links:
            link.drop()
        self._local = threading.local()
