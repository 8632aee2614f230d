# hybridcache wire protocol, version 2 (per-kind commands and results).
#
# Rules: field ordinals are only ever appended; a change that alters the meaning of an
# existing field bumps `protocolVersion`. Every method that can fail returns an `Error`
# (code == ok when it did not fail) instead of throwing, so a worker can tell a bad
# argument from a broken connection (an exception).
#
# Bootstrap: a `CacheNode`. Over TCP the bootstrap is locked: every method except `login`
# fails with `unauthenticated` until `login` is called with the node's shared secret.
@0xdf1881211cf4069a;

$import "/capnp/c++.capnp".namespace("hc::wire");

const protocolVersion :UInt32 = 2;  # 1: commands and results as one bag of fields

enum ErrorCode {
  ok @0;
  invalidArgument @1;   # a parameter is out of range or malformed (the message names it)
  invalidConfig @2;     # an instance spec failed validation (the message names the options)
  outOfMemory @3;       # a pool cannot satisfy an allocation even after eviction
  notFound @4;          # unknown request, session or node
  doubleFree @5;        # an id was returned twice
  invariantViolated @6; # an internal invariant failed (a bug; reported, never crashes)
  parseError @7;        # malformed input
  ioError @8;           # transport or storage failure
  unauthenticated @9;   # TCP connection without a valid login
  versionMismatch @10;  # client and node protocol versions differ
  closed @11;           # the session was closed
  timeout @12;          # no answer within the caller's deadline (set by clients, not the node)
  interrupted @13;      # the caller stopped waiting: a signal (set by clients, not the node)
}

struct Error {
  code @0 :ErrorCode;
  message @1 :Text;     # empty when code == ok
}

enum Strategy {
  noBuffer @0;
  extraBuffer @1;
  extraBufferLazy @2;
}

# What a worker opens a session for (architecture.md §3). Same model, rank, layout and
# pool sizes => same cache instance (DP workers may share one); each session has its own
# request table.
struct InstanceSpec {
  protocolVersion @0 :UInt32;     # must equal the node's protocolVersion
  modelId @1 :Text;               # model identity (part of the instance fingerprint);
                                  # required; printable text (no control characters), <= 256 bytes
  tpRank @2 :UInt32;
  tpSize @3 :UInt32 = 1;
  pageSize @4 :UInt32 = 1;        # tokens per KV page (P)
  kvTokens @5 :UInt64;            # usable L1 KV tokens (multiple of pageSize; + pageSize < 2^31)
  kvBytesPerToken @6 :UInt64;     # bytes of one token's KV over all full-attention layers
  ssmSlots @7 :UInt32;            # usable L1 SSM slots (ids 1..ssmSlots, at most 2^24; slot 0 reserved)
  ssmSlotBytes @8 :UInt64;        # bytes of one slot (conv + temporal state, all SSM layers)
  chunkSize @9 :UInt32 = 64;      # C = max(model chunk size, pageSize): FLA 64, Mamba2 256/128
  strategy @10 :Strategy;         # noBuffer needs pageSize 1 (SGLang forces it); else invalidConfig
  trackInterval @11 :UInt32 = 256;
  overlap @12 :Bool = true;       # overlap scheduling (ping-pong size 2)
  requestRows @13 :UInt32 = 64;   # request rows of this session
  maxContextLen @14 :UInt32;      # row width; 0 = unlimited
  slotsPerRequest @15 :UInt32;    # pre-eviction factor (<= ssmSlots); 0 = derived from strategy
  namespace @16 :Text;            # LoRA id / cache salt (extra_key); "" = default;
                                  # printable text, <= 256 bytes
  # Host tier (HiCache, cache-semantics.md §5): on when hicacheRatio or hicacheBytes > 0.
  hicacheRatio @17 :Float64;      # host pools = ratio x device pools (must be > 1)
  hicacheBytes @18 :UInt64;       # host bytes for both pools (overrides the ratio)
  hicacheWritePolicy @19 :WritePolicy;
  prefetchPolicy @20 :PrefetchPolicy;
  prefetchThreshold @21 :UInt32 = 256;  # tokens; shorter storage hits are not prefetched
  hicacheStorage @22 :Bool = true;      # back up to / prefetch from the node's L3 store
  # Where the L1 pools live: cpu = POSIX shared memory (PoolInfo.kvShm / ssmShm), cuda =
  # device memory on CUDA device deviceOrdinal (PoolInfo.kvIpcHandle / ssmIpcHandle). A node
  # built or running without CUDA refuses cuda with invalidConfig.
  device @23 :Device;
  deviceOrdinal @24 :UInt32;
  # The session's request rows in POSIX shared memory (PoolInfo.rowsShm): (requestRows + 1)
  # rows of maxContextLen Int32 KV ids, row r at r * maxContextLen (row 0 unused), SGLang's
  # req_to_token. The node writes a row's ids before the step that changed them returns;
  # match / allocKv / cacheUnfinished results then carry no index lists (the worker reads
  # its row: one copy instead of encoding, sending and decoding them). Needs
  # maxContextLen > 0. Per session; not part of the instance.
  sharedRows @25 :Bool;
  # Capacity in tokens of the session's token arena in POSIX shared memory
  # (PoolInfo.tokensShm, Int32 tokens): create / append / lookup / pin may then pass their
  # tokens as a TokenRange of it instead of a list (a prompt written once by the worker, not
  # encoded, sent and decoded). 0 = none. Per session; not part of the instance.
  sharedTokens @26 :UInt64;
  # Host bytes of the SSM pool alone (SGLang's proposed --hicache-mamba-size-gb): the host
  # SSM pool gets hicacheSsmBytes / ssmSlotBytes slots (+1), the host KV pool the rest of
  # hicacheBytes, or hicacheRatio x the device KV pool. Needs hicacheRatio or hicacheBytes;
  # less than hicacheBytes. 0 = both pools from the ratio, or hicacheBytes split in the
  # device pools' proportion.
  hicacheSsmBytes @27 :UInt64;
}

enum Device {
  cpu @0;
  cuda @1;
}

enum WritePolicy {
  writeThrough @0;           # back up a node on its first insert hit
  writeThroughSelective @1;  # on its second
  writeBack @2;              # only when a device leaf is evicted
}

enum PrefetchPolicy {
  bestEffort @0;    # admit at once; what arrived later still lands in the cache
  waitComplete @1;  # admit only when the prefetch ended
  timeout @2;       # wait at most min(30, 2 + 0.1 * tokens / 1024) seconds
}

# A command is one of the kinds below (the union's tag); each carries the fields it uses,
# each with one meaning. The request handle `req` is chosen by the worker, unique per
# session. The node sets the namespace of create / lookup / pin to the session's.
struct Command {
  union {
    create @0 :Create;                  # register `req` with prompt `tokens`
    append @1 :Append;                  # append generated `tokens` to `req`
    match @2 :ForRequest;               # prefix match of prompt[:input_len-1], copy-on-write
    lock @3 :ForRequest;                # lock req's last node
    unlock @4 :ForRequest;              # before admission only: an admitted row reads it
    allocReq @5 :ForRequest;            # row, working slot, ping-pong slots (prefix locked)
    allocKv @6 :AllocKv;
    track @7 :Track;
    prepareExtend @8 :PrepareExtend;
    prepareDecode @9 :ForRequest;       # decode tracking (lazy pre-allocation)
    processDecode @10 :ProcessDecode;
    cacheUnfinished @11 :CacheUnfinished;
    finish @12 :Finish;
    abort @13 :ForRequest;              # release without insert (abort / retraction)
    notAdmitted @14 :ForRequest;        # free the COW slot of a matched, not admitted request
    evict @15 :Evict;
    check @16 :Check;
    takeOps @17 :TakeOps;
    lookup @18 :Lookup;
    prefetch @19 :Prefetch;
    pin @20 :Pin;                       # keep a prompt's cached prefix on the device
    unpin @21 :Unpin;                   # release a pin of this session
    demote @22 :Demote;                 # take a prompt's cached path off the device now
  }

  struct ForRequest { req @0 :UInt64; }
  # With `shared` set (tokens then empty) the tokens are that range of the session's token
  # arena (InstanceSpec.sharedTokens), copied by the node before the step runs: the worker
  # may reuse the range once the step returned. A range outside the arena, a session
  # without one, or both forms at once refuse the whole step (invalidArgument).
  struct Create { req @0 :UInt64; tokens @1 :List(Int32); shared @2 :TokenRange; }
  struct Append { req @0 :UInt64; tokens @1 :List(Int32); shared @2 :TokenRange; }
  struct TokenRange { at @0 :UInt64; count @1 :UInt64; }   # token offset and count
  struct AllocKv {                      # `count` KV ids at row position `start`
    req @0 :UInt64;
    start @1 :UInt64;
    count @2 :UInt64;
    # The rest of the request instead: from the end of its row (after allocReq: its
    # matched prefix) to its last token; start and count are ignored. Admission and the
    # KV allocation then go in one step without the worker knowing the prefix length.
    toEnd @3 :Bool;
  }
  struct Track {                        # snapshot recorded at `seqlen`
    req @0 :UInt64;
    seqlen @1 :UInt64;
    flip @2 :Bool;                      # flip next_track_idx
  }
  struct PrepareExtend {                # prefill tracking for `count` tokens after `start`
    req @0 :UInt64;
    start @1 :UInt64;
    count @2 :UInt64;
  }
  struct ProcessDecode {
    req @0 :UInt64;
    finished @1 :Bool;
    acceptedDrafts @2 :UInt64;          # > 0: speculative decoding (extra_buffer only, as SGLang)
  }
  struct CacheUnfinished { req @0 :UInt64; fillLen @1 :UInt64; }
  struct Finish {                       # cache_finished_req
    req @0 :UInt64;
    expectedLen @1 :UInt64;             # > 0: the total length, checked against the commit
  }
  struct Evict { tokens @0 :UInt64; slots @1 :UInt64; }  # tokens first, then slots
  struct Check { full @0 :Bool; }       # tree totals; full: the sanity check (idle only)
  struct TakeOps {                      # queue the deferred data ops of extend batch `reqs`
    reqs @0 :List(UInt64);
    batch @1 :UInt64;                   # the forward batch that consumes them
  }
  struct Lookup {                       # match without a request: no COW, no lock
    tokens @0 :List(Int32);
    withoutIndices @1 :Bool;  # the result's indices left empty (the lengths are all a router
                              # or a scheduling policy needs; the node reads no node ids)
    shared @2 :TokenRange;    # instead of tokens, as for Create: a prompt a scheduling policy
                              # looks up step after step is written to the arena once
  }
  struct Prefetch {                     # storage prefetch of req's prompt (host tier + L3):
    req @0 :UInt64;                     # the first call starts it, later calls poll
    admitNow @1 :Bool;                  # the worker admits req now
  }
  # Not an SGLang call: cache control for an agent or an API server (a system prompt, a
  # conversation it will come back to). Matches `tokens` as a lookup does and locks the
  # deepest cached node with a state, as a request's match does, so that no eviction takes
  # that resumable prefix until `unpin`, the end of `ttlMs` or the session's close. Pins of
  # an instance hold at most half its KV pool (each pin counted whole; outOfMemory past it),
  # a session at most 4096 pins; a pin whose TTL ended is released at the instance's next
  # step (only steps evict). With a host tier, what of the prefix is on the host only is
  # loaded back to the device first, as a request's match does (the result's loadedTokens).
  struct Pin {
    tokens @0 :List(Int32);
    shared @1 :TokenRange;              # instead of tokens, as for Create
    ttlMs @2 :UInt64;                   # 0: until unpin or the session's close; at most 7 days
  }
  struct Unpin { pin @0 :UInt64; }      # the id a Pin result gave; notFound once released
  # Not an SGLang call: cache control for an agent or an API server whose conversation waits
  # (on a tool, on its user). Takes the cached path of `tokens` off the device now, as
  # eviction would take those nodes if they were the least recent: deepest first, only
  # what no request or pin holds and no other branch still on the device extends. With a
  # host tier it stays resumable — demoted to the host, where a later match loads it back;
  # what has no host copy yet is backed up first and demoted once that copy is done,
  # unless a match or insert used it meanwhile — without one it is evicted. Nodes move
  # whole; nothing is split, and recency is left alone.
  struct Demote {
    tokens @0 :List(Int32);
    shared @1 :TokenRange;              # instead of tokens, as for Create
  }
}

struct PoolState {
  kvAvail @0 :UInt64;
  slotsAvail @1 :UInt64;
  rowsAvail @2 :UInt64;
  fullEvictable @3 :UInt64;
  fullProtected @4 :UInt64;
  mambaEvictable @5 :UInt64;
  mambaProtected @6 :UInt64;
}

# What every command reports, and the body of its kind when it succeeded (`none` for the
# kinds that only succeed or fail: create, append, lock, unlock, processDecode, abort,
# notAdmitted; and for every failure).
struct CommandResult {
  error @0 :Error;
  pools @1 :PoolState;
  elapsedNs @2 :UInt64;         # time inside the cache
  union {
    none @3 :Void;
    match @4 :Match;
    lookup @5 :Lookup;
    allocReq @6 :AllocReq;
    allocKv @7 :AllocKv;
    track @8 :Track;
    prepareExtend @9 :PrepareExtend;
    prepareDecode @10 :PrepareDecode;
    cacheUnfinished @11 :CacheUnfinished;
    finish @12 :Finish;
    evict @13 :Evict;
    check @14 :Check;
    takeOps @15 :TakeOps;
    prefetch @16 :Prefetch;
    pin @17 :Pin;
    demote @18 :Demote;
  }

  struct Match {
    prefixLen @0 :UInt64;       # resumable prefix: the request starts here
    kvMatched @1 :UInt64;       # KV tokens matched, resumable or not (>= prefixLen)
    indices @2 :List(Int32);    # empty when the session's rows are shared
    nodeSlot @3 :Int32 = -1;
    hasBranching @4 :Bool;
    branching @5 :UInt64;
    working @6 :Int32 = -1;
    loadedTokens @7 :UInt64;    # of the prefix, loaded back from the host tier
  }
  struct Lookup {
    prefixLen @0 :UInt64;
    kvMatched @1 :UInt64;
    indices @2 :List(Int32);
    nodeSlot @3 :Int32 = -1;
    hasBranching @4 :Bool;
    branching @5 :UInt64;
  }
  struct AllocReq {
    row @0 :Int32 = -1;
    working @1 :Int32 = -1;
    pingpong @2 :List(Int32);   # entries (-1 = empty); empty list = none
  }
  struct AllocKv { indices @0 :List(Int32); }   # empty when the session's rows are shared
  struct Track { keepSlot @0 :Int32 = -1; }
  struct PrepareExtend {
    mask @0 :Bool;              # snapshot this step
    kernelSeqlen @1 :Int64 = -1;  # position the kernel tracks to
    trackSlot @2 :Int32 = -1;
  }
  struct PrepareDecode {
    mask @0 :Bool;
    trackSlot @1 :Int32 = -1;
  }
  struct CacheUnfinished {
    inserted @0 :Bool;
    protectedLen @1 :UInt64;
    prefix @2 :List(Int32);     # the request's KV ids after the insert; empty when its rows are shared
    nodeSlot @3 :Int32 = -1;
  }
  struct Finish {
    inserted @0 :Bool;
    cachedLen @1 :UInt64;
    mambaExist @2 :Bool;
  }
  struct Evict {
    tokensEvicted @0 :UInt64;
    mambaEvicted @1 :UInt64;
    tokensFreedTotal @2 :UInt64;
    slotsFreedTotal @3 :UInt64;
  }
  struct Check {
    treeTokens @0 :UInt64;
    treeSlots @1 :UInt64;
    sanity @2 :Bool = true;
    sanityDetail @3 :Text;
  }
  struct TakeOps {
    snapshots @0 :UInt64;
    clears @1 :UInt64;
    cows @2 :UInt64;
  }
  struct Prefetch {
    ready @0 :Bool;             # the request may be admitted now (policy)
    outcome @1 :Text;           # "" while running, else completed | truncated | partial |
                                # skipped_below_threshold | rate_limited | timed_out |
                                # revoked | aborted
    storageHitTokens @2 :UInt64;  # tokens it brought from L3 to the host tier
  }
  struct Pin {
    pin @0 :UInt64;             # the pin's id (for unpin); 0: nothing cached, no pin made
    pinnedLen @1 :UInt64;       # the resumable prefix it holds on the device
    kvMatched @2 :UInt64;       # KV tokens matched (>= pinnedLen; the rest is not held)
    loadedTokens @3 :UInt64;    # of pinnedLen, loaded back from the host tier (L2) first
  }
  struct Demote {               # device KV of the path's nodes (whole), by where it went
    matchedTokens @0 :UInt64;   # tokens of the prompt found in the tree, any tier
    demotedTokens @1 :UInt64;   # moved to the host tier now (resumable after a load-back)
    evictedTokens @2 :UInt64;   # dropped now (no host tier)
    slotsFreed @3 :UInt64;      # device SSM slots freed now
    deferredTokens @4 :UInt64;  # demoted once the backups it queued are done
    keptTokens @5 :UInt64;      # stays: held by a request or pin, or extended by another branch
  }
}

struct PoolInfo {
  kvShm @0 :Text;               # POSIX shared-memory name of the KV pool ("" in CUDA mode)
  kvBytes @1 :UInt64;           # (kvTokens + pageSize) * kvBytesPerToken; token 0.. reserved
  ssmShm @2 :Text;
  ssmBytes @3 :UInt64;          # (ssmSlots + 1) * ssmSlotBytes; slot 0 reserved
  kvBytesPerToken @4 :UInt64;
  ssmSlotBytes @5 :UInt64;
  instanceId @6 :UInt64;
  device @7 :Device;            # the instance's device (its spec's)
  deviceOrdinal @8 :UInt32;
  kvIpcHandle @9 :Data;         # device cuda: cudaIpcMemHandle_t (64 bytes) of the KV pool
  ssmIpcHandle @10 :Data;       # device cuda: of the SSM pool; empty when it has no bytes
  # device cuda: the session's fence events (cudaIpcEventHandle_t, 64 bytes each). After
  # beginForward the worker's stream waits on readyEvent (cudaStreamWaitEvent: the batch's
  # clears and copies are queued before it); after its forward the worker records
  # doneEvent on its stream, then calls endForward: the node's later work waits on it.
  readyEventIpcHandle @11 :Data;
  doneEventIpcHandle @12 :Data;
  # InstanceSpec.sharedRows: the session's request rows ((requestRows + 1) x rowWidth Int32
  # KV ids, row r at r * rowWidth); "" / 0 otherwise. Unlinked when the session closes.
  rowsShm @13 :Text;
  rowsBytes @14 :UInt64;
  rowWidth @15 :UInt64;
  # InstanceSpec.sharedTokens: the session's token arena (sharedTokens Int32 tokens); "" / 0
  # otherwise. Unlinked when the session closes.
  tokensShm @16 :Text;
  tokensBytes @17 :UInt64;
}

struct Stat {
  name @0 :Text;
  value @1 :Float64;
}

interface Session {
  # One scheduling step: commands run in order; a command whose request already failed
  # earlier in the batch is skipped. One RPC per step.
  step @0 (commands :List(Command)) -> (error :Error, results :List(CommandResult));
  # Returns once every op queued for `batch` has run and the previous forward ended.
  beginForward @1 (batch :UInt64) -> (error :Error, waitedNs :UInt64);
  endForward @2 (batch :UInt64) -> (error :Error);
  poolInfo @3 () -> (error :Error, info :PoolInfo);
  # Bytes for workers that cannot map the pools: a KV page (P tokens) or an SSM slot.
  readKvPage @4 (page :UInt64) -> (error :Error, data :Data);
  writeKvPage @5 (page :UInt64, data :Data) -> (error :Error);
  readSlot @6 (slot :Int32) -> (error :Error, data :Data);
  writeSlot @7 (slot :Int32, data :Data) -> (error :Error);
  # Releases every request, lock and slot of the session (also done on disconnect);
  # returns once the instance is idle (or, beyond the node's idle limit, destroyed and
  # its shared memory unlinked).
  close @8 () -> (error :Error);
}

# L3 for external clients (SGLang's HiCache storage backend, integration.md §1.3-§1.5):
# values under the client's keys, namespaced by the identity given to CacheNode.store, in
# the node's L3 store next to (never mixed with) the node's own keys. Bytes move through
# a node-owned shared-memory arena the client maps (`arena`): a value is the concatenation
# of its segments (offset, length) in the arena, so a scattered Mamba state is one value.
enum StorePool {
  kvPage @0;
  ssmState @1;
}

struct Segment {
  offset @0 :UInt64;
  length @1 :UInt64;
}

struct StoreEntry {
  key @0 :Text;
  segments @1 :List(Segment);
}

enum HitPolicy {
  allPages @0;       # every page in [0, p) must be present in the pool
  trailingPages @1;  # the last `trailing` pages before p must be present (Mamba: 1)
}

struct SidecarQuery {
  pool @0 :StorePool;
  policy @1 :HitPolicy;
  trailing @2 :UInt32 = 1;
  keySuffix @3 :Text;  # the pool's key of page i is kvKeys[i] + keySuffix ("" by default):
                       # e.g. one TP rank's SSM state of an MLA model, whose KV pages every
                       # rank shares under the same keys; printable text, at most 256 bytes
}

interface Store {
  arena @0 () -> (error :Error, shm :Text, bytes :UInt64, maxKeys :UInt32);
  # maxKeys: the most keys (entries) one exists / get / set takes (0 from a node before
  # this field: 65536, its fixed limit then).
  # v2 existence over the KV page keys (batch_exists_v2): the leading run of present KV
  # pages, and every restorable prefix length in pages given the sidecar pools (sparse
  # for trailing pools; ranks intersect these sets).
  exists @1 (kvKeys :List(Text), sidecars :List(SidecarQuery))
         -> (error :Error, kvHitPages :UInt32, restorablePrefixPages :List(UInt32));
  # Reads each value into its segments; ok[i] is false for a missing or corrupt value or
  # a value whose length differs from its segments' total (positional, like batch_get_v2).
  get @2 (pool :StorePool, entries :List(StoreEntry)) -> (error :Error, ok :List(Bool));
  # Writes each value from its segments (idempotent); ok[i] per entry.
  set @3 (pool :StorePool, entries :List(StoreEntry)) -> (error :Error, ok :List(Bool));
  # Erases every value of this identity, both pools (SGLang's clear); `removed` counts them.
  clear @4 () -> (error :Error, removed :UInt64);
}

interface CacheNode {
  # Every call but login answers UNAUTHENTICATED in `error` on a locked (TCP) bootstrap
  # until login; the other results are then empty.
  ping @0 () -> (protocolVersion :UInt32, nodeVersion :Text, error :Error);
  open @1 (spec :InstanceSpec) -> (error :Error, session :Session, info :PoolInfo);
  stats @2 () -> (stats :List(Stat), error :Error);
  inspect @3 (blocks :Bool) -> (json :Text, error :Error);  # instances, trees and pools as one JSON document
  # blocks: each instance's tree also lists every KV page on the device ("blocks": hash,
  # parent hash, checkpoint = the page ends a node with an SSM state, namespace), the set
  # the node's KV events describe; and "kv_events" the last sequence number published.
  login @4 (token :Text) -> (error :Error, node :CacheNode);
  # The L3 store for an external client; `identity` (model, rank coordinate, layout —
  # anything that must keep two clients' values apart) namespaces its keys.
  store @5 (identity :Text) -> (error :Error, store :Store);
  # Returns once no tier work of any instance is in flight: the D→H / H→D copies, L3
  # writes and prefetch reads that the steps so far started, and the work they started in
  # turn, have all finished, and every close the node had received (a dropped
  # connection's sessions included) is done. For tests and tools that check the node once
  # a load ended (under a steady load it may not return). Backups deferred until a session copies the
  # state into their slot are not in flight until that happens.
  drain @6 () -> (error :Error);
}
