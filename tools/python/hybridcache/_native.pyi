"""Type stubs of hybridcache._native, the C++ client for Python (tools/python/native_module.cpp).
Use the `hybridcache` package; this module is its implementation."""

from typing import Any, List, Optional, Sequence, Tuple, Union, overload

__version__: str

#: A command's tokens: a sequence of ints (a list, a tuple, a range), or a 1-D integer array
#: (NumPy, array.array, a CPU torch tensor), each a token id (int32). Read back as a list.
Tokens = Union[Sequence[int], Any]

class Error(Exception): ...
class InvalidArgument(Error): ...
class InvalidConfig(Error): ...
class OutOfMemory(Error): ...
class NotFound(Error): ...
class Unavailable(Error): ...
class Timeout(Error): ...

class Strategy:
    NO_BUFFER: Strategy
    EXTRA_BUFFER: Strategy
    EXTRA_BUFFER_LAZY: Strategy

class StorePool:
    KV_PAGE: StorePool
    SSM_STATE: StorePool

class Sidecar:
    pool: StorePool
    trailing: bool
    n: int
    key_suffix: str
    def __init__(self, pool: StorePool = ..., trailing: bool = True, n: int = 1,
                 key_suffix: str = "") -> None: ...

class InstanceSpec:
    model_id: str
    tp_rank: int
    tp_size: int
    page_size: int
    kv_tokens: int
    kv_bytes_per_token: int
    ssm_slots: int
    ssm_slot_bytes: int
    chunk_size: int
    strategy: Strategy
    track_interval: int
    overlap: bool
    request_rows: int
    max_context_len: int
    shared_rows: bool
    shared_tokens: int
    slots_per_request: int
    namespace: str
    hicache_ratio: float
    hicache_bytes: int
    hicache_ssm_bytes: int
    prefetch_threshold: int
    hicache_storage: bool
    device: str
    device_ordinal: int
    def __init__(self) -> None: ...

class PoolState:
    kv_avail: int
    slots_avail: int
    rows_avail: int
    full_evictable: int
    full_protected: int
    mamba_evictable: int
    mamba_protected: int

class PoolInfo:
    kv_shm: str
    kv_bytes: int
    ssm_shm: str
    ssm_bytes: int
    kv_bytes_per_token: int
    ssm_slot_bytes: int
    instance_id: int
    device: str
    device_ordinal: int
    kv_ipc_handle: bytes
    ssm_ipc_handle: bytes
    ready_event_ipc_handle: bytes
    done_event_ipc_handle: bytes
    rows_shm: str
    rows_bytes: int
    row_width: int
    tokens_shm: str
    tokens_bytes: int

class CudaMapping:
    ptr: int
    size: int

def map_cuda(device: int, handle: bytes, size: int) -> CudaMapping: ...

class PingReply:
    protocol_version: int
    node_version: str

class cmd:
    class Create:
        req: int
        tokens: List[int]
        shared: Optional[Tuple[int, int]]
        def __init__(self, req: int, tokens: Tokens = ..., *,
                     at: Optional[int] = None, count: Optional[int] = None) -> None: ...
    class Append:
        req: int
        tokens: List[int]
        shared: Optional[Tuple[int, int]]
        def __init__(self, req: int, tokens: Tokens = ..., *,
                     at: Optional[int] = None, count: Optional[int] = None) -> None: ...
    class Match:
        req: int
        def __init__(self, req: int) -> None: ...
    class Lock:
        req: int
        def __init__(self, req: int) -> None: ...
    class Unlock:
        req: int
        def __init__(self, req: int) -> None: ...
    class AllocReq:
        req: int
        def __init__(self, req: int) -> None: ...
    class PrepareDecode:
        req: int
        def __init__(self, req: int) -> None: ...
    class Abort:
        req: int
        def __init__(self, req: int) -> None: ...
    class NotAdmitted:
        req: int
        def __init__(self, req: int) -> None: ...
    class AllocKv:
        req: int
        start: int
        count: int
        to_end: bool
        @overload
        def __init__(self, req: int, start: int, count: int) -> None: ...
        @overload
        def __init__(self, req: int, to_end: bool) -> None: ...
    class Track:
        req: int
        seqlen: int
        flip: bool
        def __init__(self, req: int, seqlen: int, flip: bool = False) -> None: ...
    class PrepareExtend:
        req: int
        start: int
        count: int
        def __init__(self, req: int, start: int, count: int) -> None: ...
    class ProcessDecode:
        req: int
        finished: bool
        accepted_drafts: int
        def __init__(self, req: int, finished: bool = False, accepted_drafts: int = 0) -> None: ...
    class CacheUnfinished:
        req: int
        fill_len: int
        def __init__(self, req: int, fill_len: int) -> None: ...
    class Finish:
        req: int
        expected_len: int
        def __init__(self, req: int, expected_len: int = 0) -> None: ...
    class Evict:
        tokens: int
        slots: int
        def __init__(self, tokens: int = 0, slots: int = 0) -> None: ...
    class Check:
        full: bool
        def __init__(self, full: bool = False) -> None: ...
    class TakeOps:
        reqs: List[int]
        batch: int
        def __init__(self, reqs: Sequence[int], batch: int) -> None: ...
    class Lookup:
        tokens: List[int]
        without_indices: bool
        shared: Optional[Tuple[int, int]]
        def __init__(self, tokens: Tokens = ..., without_indices: bool = False, *,
                     at: Optional[int] = None, count: Optional[int] = None) -> None: ...
    class Prefetch:
        req: int
        admit_now: bool
        def __init__(self, req: int, admit_now: bool = False) -> None: ...
    class Pin:
        tokens: List[int]
        ttl_ms: int
        shared: Optional[Tuple[int, int]]
        def __init__(self, tokens: Tokens = ..., ttl_ms: int = 0, *,
                     at: Optional[int] = None, count: Optional[int] = None) -> None: ...
    class Unpin:
        pin: int
        def __init__(self, pin: int) -> None: ...
    class Demote:
        tokens: List[int]
        shared: Optional[Tuple[int, int]]
        def __init__(self, tokens: Tokens = ..., *,
                     at: Optional[int] = None, count: Optional[int] = None) -> None: ...

Command = Union[cmd.Create, cmd.Append, cmd.Match, cmd.Lock, cmd.Unlock, cmd.AllocReq,
                cmd.PrepareDecode, cmd.Abort, cmd.NotAdmitted, cmd.AllocKv, cmd.Track,
                cmd.PrepareExtend, cmd.ProcessDecode, cmd.CacheUnfinished, cmd.Finish,
                cmd.Evict, cmd.Check, cmd.TakeOps, cmd.Lookup, cmd.Prefetch, cmd.Pin,
                cmd.Unpin, cmd.Demote]

class res:
    class Match:
        prefix_len: int
        kv_matched: int
        indices: List[int]
        indices_array: Any  # numpy.ndarray of int32, a copy at each read
        node_slot: int
        branching: Optional[int]
        working: int
        loaded_tokens: int
    class Lookup:
        prefix_len: int
        kv_matched: int
        indices: List[int]
        indices_array: Any  # numpy.ndarray of int32, a copy at each read
        node_slot: int
        branching: Optional[int]
    class AllocReq:
        row: int
        working: int
        pingpong: Optional[Tuple[int, int]]
    class AllocKv:
        indices: List[int]
        indices_array: Any  # numpy.ndarray of int32, a copy at each read
    class Track:
        keep_slot: int
    class PrepareExtend:
        mask: bool
        kernel_seqlen: int
        track_slot: int
    class PrepareDecode:
        mask: bool
        track_slot: int
    class CacheUnfinished:
        inserted: bool
        protected_len: int
        prefix: List[int]
        prefix_array: Any  # numpy.ndarray of int32, a copy at each read
        node_slot: int
    class Finish:
        inserted: bool
        cached_len: int
        mamba_exist: bool
    class Evict:
        tokens_evicted: int
        mamba_evicted: int
        tokens_freed_total: int
        slots_freed_total: int
    class Check:
        tree_tokens: int
        tree_slots: int
        sanity: bool
        sanity_detail: str
    class TakeOps:
        snapshots: int
        clears: int
        cows: int
    class Prefetch:
        ready: bool
        outcome: str
        storage_hit_tokens: int
    class Pin:
        pin: int
        pinned_len: int
        kv_matched: int
        loaded_tokens: int
    class Demote:
        matched_tokens: int
        demoted_tokens: int
        evicted_tokens: int
        slots_freed: int
        deferred_tokens: int
        kept_tokens: int

class CommandResult:
    @property
    def ok(self) -> bool: ...
    @property
    def code(self) -> str: ...
    error: str
    pools: PoolState
    elapsed_ns: int
    body: Any  # one of the res classes, or None

class Session:
    def step(self, commands: Sequence[Command]) -> List[CommandResult]: ...
    def begin_forward(self, batch: int) -> int: ...
    def end_forward(self, batch: int) -> None: ...
    def pools(self) -> PoolInfo: ...
    def read_slot(self, slot: int) -> bytes: ...
    def write_slot(self, slot: int, data: bytes) -> None: ...
    def read_kv_page(self, page: int) -> bytes: ...
    def write_kv_page(self, page: int, data: bytes) -> None: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...

Segments = List[Tuple[int, int]]

class Store:
    def exists(self, kv_keys: List[str], sidecars: List[Sidecar]) -> Tuple[int, List[int]]: ...
    def get(self, pool: StorePool, entries: List[Tuple[str, Segments]]) -> List[bool]: ...
    def set(self, pool: StorePool, entries: List[Tuple[str, Segments]]) -> List[bool]: ...
    def set_from(self, pool: StorePool, entries: List[Tuple[str, Segments]],
                 addresses: List[int], part_bytes: int) -> List[bool]: ...
    def get_into(self, pool: StorePool, entries: List[Tuple[str, Segments]],
                 addresses: List[int], part_bytes: int) -> List[bool]: ...
    def clear(self) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def arena_name(self) -> str: ...
    @property
    def arena_bytes(self) -> int: ...
    @property
    def max_keys(self) -> int: ...

class Node:
    def __init__(self, address: str, token: str, timeout: float,
                 io_thread: bool = True) -> None: ...
    def ping(self) -> PingReply: ...
    def stats(self) -> List[Tuple[str, float]]: ...
    def inspect(self, blocks: bool = False) -> str: ...
    def drain(self) -> None: ...
    def open(self, spec: InstanceSpec) -> Session: ...
    def store(self, identity: str) -> Store: ...

def copy_in(buffer: Any, offsets: List[int], addresses: List[int], lengths: List[int]) -> None: ...
def copy_out(buffer: Any, offsets: List[int], addresses: List[int], lengths: List[int]) -> None: ...
