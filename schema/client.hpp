#pragma once
// hybridcache's C++ client library (CMake: find_package(hybridcache) ->
// hybridcache::client). Synchronous: every call runs the RPC on the calling thread's kj
// event loop and returns its result. A client and its sessions must be used from the
// thread that created the client, and destroyed there (client::sever is the one call
// another thread may make). The clients of one thread share its kj event loop, which the
// library makes with the first and ends with the last: that thread cannot also hold a
// capnp::EzRpcClient (kj allows one loop per thread); a program of its own Cap'n Proto
// calls makes them on another thread. Transport failures come back as errc::io_error; a call
// that missed the client's deadline (set_call_timeout) is cancelled and comes back as
// errc::timeout, one whose interrupt check said stop (set_interrupt_check) as
// errc::interrupted, and the client stays usable.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "actors/common/command.hpp"
#include "actors/common/instance_spec.hpp"
#include "actors/common/pool_info.hpp"
#include "actors/common/status.hpp"
#include "actors/common/store_types.hpp"

namespace hc {

/// Asked while a call waits for its answer (every interrupt_check_interval, on the
/// client's thread): true stops the wait, cancels the call and returns errc::interrupted —
/// how a binding lets its language's signal handling (Python's Ctrl-C) through a call to a
/// node that hangs.
using interrupt_check = std::function<bool()>;
inline constexpr std::chrono::milliseconds interrupt_check_interval{50};

struct ping_reply {
  std::uint32_t protocol_version = 0;
  std::string node_version;
};

class client;

/// An open session. Closing (explicitly or by destruction) releases every request,
/// lock and slot it holds on the node.
class client_session {
 public:
  ~client_session();
  client_session(const client_session&) = delete;
  client_session& operator=(const client_session&) = delete;

  /// One scheduling step; one result per command. A step-level error (limits, closed
  /// session) is the returned error.
  result<std::vector<command_result>> step(std::span<const command> cmds);
  /// Waits until the ops queued for `batch` have run and the session's previous forward
  /// ended; returns the wait in ns. A later batch while this session's forward begun here
  /// has not ended is refused at once (invalid_argument): only this thread could end it.
  result<std::uint64_t> begin_forward(std::uint64_t batch);
  status end_forward(std::uint64_t batch);
  const pool_info& pools() const noexcept { return info_; }
  result<std::vector<std::byte>> read_slot(slot_id s);
  status write_slot(slot_id s, std::span<const std::byte> data);
  result<std::vector<std::byte>> read_kv_page(std::uint64_t page);
  status write_kv_page(std::uint64_t page, std::span<const std::byte> data);
  /// Releases the session's requests; returns once its instance is idle (or, beyond
  /// max_idle_instances, destroyed with its shared memory unlinked).
  status close();

 private:
  friend class client;
  struct impl;
  client_session(std::unique_ptr<impl> p, pool_info info);
  std::unique_ptr<impl> impl_;
  pool_info info_;
};

/// One value of an external client: its key and where its bytes are in the arena (the
/// value is the concatenation of the segments).
struct store_entry {
  std::string key;
  std::vector<store_segment> segments;
};

struct store_exists_reply {
  std::uint32_t kv_hit_pages = 0;               ///< leading run of present KV pages
  std::vector<std::uint32_t> restorable_pages;  ///< every restorable prefix length, ascending
};

/// The node's L3 store for an external client (CacheNode.store; SGLang's HiCache storage
/// backend surface, integration.md §1.3-§1.5). Its keys live in the client's namespace.
/// Bytes move through arena(), node-owned shared memory this object maps: write a value's
/// bytes there and `set` it, or `get` values into it — each byte crosses once.
class client_store {
 public:
  ~client_store();
  client_store(const client_store&) = delete;
  client_store& operator=(const client_store&) = delete;

  /// The mapped arena (its offsets are what segments address).
  std::span<std::byte> arena() const noexcept;
  /// The most keys (entries) one exists / get / set takes, as the node said (65536 on
  /// hybridcached); a larger call is invalid_argument. set_from / get_into cut their parts
  /// at it.
  std::size_t max_keys() const noexcept;
  /// The arena's POSIX shared-memory name, for another mapping of the same bytes (e.g.
  /// /dev/shm/<name> from Python). A get or set that timed out may still touch the arena
  /// on the node: drop the store (and its arena) rather than reuse the range.
  const std::string& arena_name() const noexcept;
  /// batch_exists_v2 over KV page keys with sidecar pools (e.g. the SSM state,
  /// TRAILING_PAGES(1)).
  result<store_exists_reply> exists(std::span<const std::string> kv_keys,
                                    std::span<const store_sidecar> sidecars = {});
  /// Reads each entry's value into its segments; one bool per entry (false: missing, corrupt
  /// or of another length). Bad segments fail the call (invalid_argument).
  result<std::vector<bool>> get(store_pool pool, std::span<const store_entry> entries);
  /// Writes each entry's segments as its value (idempotent); one bool per entry.
  result<std::vector<bool>> set(store_pool pool, std::span<const store_entry> entries);
  /// Erases every value under this store's identity (both pools); returns how many.
  result<std::uint64_t> clear();

  /// `set` of values that are elsewhere in the caller's memory: each segment's bytes are
  /// first copied from `addresses` (one per segment, the entries' segments in order) to
  /// its arena range. The batch goes in parts of at most `part_bytes` (a larger value
  /// alone; 0: no limit) and of at most max_keys() values, one `set` call each, and a
  /// part is copied while the node writes the part before — unless their arena ranges
  /// meet, then after it. Values may reuse arena space (e.g. all at offset 0): a value
  /// whose arena bytes are those of one already in the part starts a new part, so each
  /// value moves with its own bytes. Bad input (addresses not one per segment, a segment
  /// outside the arena, a null address, two segments of one value overlapping in the
  /// arena) is invalid_argument before anything is copied or sent. One bool per entry, as
  /// `set`. An error of a part (the node's, e.g. a bad key, or a timeout: see arena_name)
  /// ends the call with it; the parts before it were set.
  result<std::vector<bool>> set_from(store_pool pool, std::span<const store_entry> entries,
                                     std::span<const std::uintptr_t> addresses,
                                     std::uint64_t part_bytes);
  /// `get` whose values go on to the caller's memory: each present value's segments are
  /// copied from the arena to `addresses` (one per segment, as in set_from; a missing
  /// value's addresses are not written). In parts as set_from: a part is copied out while
  /// the node reads the next one into the arena, unless their arena ranges meet. An
  /// error ends the call as in set_from, the parts before it copied out.
  result<std::vector<bool>> get_into(store_pool pool, std::span<const store_entry> entries,
                                     std::span<const std::uintptr_t> addresses,
                                     std::uint64_t part_bytes);

 private:
  friend class client;
  struct impl;
  explicit client_store(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

class client {
 public:
  /// address: "unix:/path/to.sock" or "host:port" (TCP; then `token` is required).
  /// call_timeout > 0 bounds the connect and every later call (see set_call_timeout);
  /// `interrupted` is the connect's interrupt check and every later call's (see
  /// set_interrupt_check).
  static result<std::unique_ptr<client>> connect(const std::string& address,
                                                 const std::string& token = "",
                                                 std::chrono::milliseconds call_timeout = {},
                                                 interrupt_check interrupted = {});
  ~client();
  client(const client&) = delete;
  /// Every later call of this client and its sessions and stores waits at most `t` (0: no
  /// deadline, the default); a late call is cancelled and returns errc::timeout. A step
  /// that timed out may still have run on the node.
  void set_call_timeout(std::chrono::milliseconds t) noexcept;
  /// Every later call of this client and its sessions and stores asks `check` while it
  /// waits (empty: never); when it says stop, the call is cancelled and returns
  /// errc::interrupted (a step may still have run on the node). Called on this client's
  /// thread only.
  void set_interrupt_check(interrupt_check check);
  client& operator=(const client&) = delete;
  /// Shuts the connection's socket down, from any thread (not concurrently with the
  /// client's destruction): the node sees the connection end and releases its sessions
  /// and stores at once, and every later call of this client, its sessions and stores
  /// fails with io_error. The objects must still be destroyed on the client's thread; for
  /// an owner that cannot get back there (a binding whose object was dropped on another
  /// thread).
  void sever() noexcept;

  result<ping_reply> ping();
  result<std::unique_ptr<client_session>> open(const instance_spec& spec);
  result<std::vector<std::pair<std::string, double>>> stats();
  /// Instances, trees and pools as one JSON document.
  /// `blocks`: also every device KV page of every instance (CacheNode.inspect).
  result<std::string> inspect(bool blocks = false);
  /// Returns once no tier work of any instance is in flight (copies, L3 writes, prefetch
  /// reads, and what they started) and every close the node had received (a dropped
  /// session included) is done: the node's state after a load has settled.
  status drain();
  /// The node's L3 store under `identity` (1..256 printable characters naming the model,
  /// rank coordinate and layout of the caller); maps its arena.
  result<std::unique_ptr<client_store>> open_store(const std::string& identity);

 private:
  struct impl;
  explicit client(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hc
