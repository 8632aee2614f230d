#pragma once
// What the actors report for monitoring. Implemented by monitoring/ (prometheus-cpp);
// actors only see this interface (architecture.md §6). Every method may be called from
// any actor thread concurrently: implementations must be thread-safe and cheap.

#include <cstdint>
#include <string_view>

namespace hc {

/// Occupancy of one instance's L1 pools, and of its L2 host pools if it has a host tier
/// (gauges).
struct pool_gauges {
  std::uint64_t kv_capacity = 0, kv_used = 0, kv_evictable = 0, kv_protected = 0;
  std::uint64_t slot_capacity = 0, slot_used = 0, slot_evictable = 0, slot_protected = 0;
  /// Of the protected: the pins' pinned lengths summed, and the pins (one state each).
  std::uint64_t kv_pinned = 0, pins = 0;
  bool host = false;  ///< the instance has host pools: the four below are theirs
  std::uint64_t host_kv_capacity = 0, host_kv_used = 0, host_slot_capacity = 0, host_slot_used = 0;
};

class metrics_sink {
 public:
  virtual ~metrics_sink() = default;
  /// A match: tokens matched by the KV walk, and the resumable part (with an SSM state).
  virtual void l1_match(std::uint64_t kv_matched, std::uint64_t resumable) = 0;
  /// Tokens that matches looked up (their keys: each prompt but its last token), the
  /// denominator of the token hit rate; reported once a step for all its matches.
  virtual void queried_tokens(std::uint64_t n) = 0;
  virtual void inserted_tokens(std::uint64_t n) = 0;
  /// reason: "pressure" (allocation-driven) or "explicit" (an evict command).
  virtual void evicted(std::string_view reason, std::uint64_t tokens, std::uint64_t slots) = 0;
  /// Tree nodes that became tombstones; cause: "eviction" or "split".
  virtual void tombstones(std::string_view cause, std::uint64_t n) = 0;
  virtual void forward_ops(std::uint64_t snapshots, std::uint64_t clears, std::uint64_t cows) = 0;
  virtual void command_error(std::string_view kind) = 0;
  virtual void fence_wait(double seconds) = 0;
  virtual void pools(std::uint64_t instance, const pool_gauges& g) = 0;
  /// The instance was destroyed: its pool gauges go away.
  virtual void instance_closed(std::uint64_t instance) = 0;
  virtual void sessions(std::int64_t delta) = 0;
  /// One RPC served: method name and its server-side latency.
  virtual void rpc(std::string_view method, double seconds) = 0;

  // --- tiers (HiCache) ---
  /// A match that loaded `tokens` back from the host tier (an L2 hit).
  virtual void l2_hit(std::uint64_t tokens) = 0;
  /// A storage prefetch ended with `outcome` (prefetch_outcome's name) after `seconds`,
  /// bringing `tokens` from L3 to the host, `resumable` of them with their SSM state.
  virtual void prefetch(std::string_view outcome, std::uint64_t tokens, std::uint64_t resumable,
                        double seconds) = 0;
  /// Bytes a tier moved in one transfer of `seconds` (0: not timed): tier "l2" (host
  /// pools) | "l3" (store); direction "read" | "write".
  virtual void tier_bytes(std::string_view tier, std::string_view direction, std::uint64_t bytes,
                          double seconds) = 0;
  /// One node's L3 backup ended (failed: a batch or the state failed to write).
  virtual void backup(double seconds, bool failed) = 0;
  /// The host tier evicted `tokens` KV tokens and `slots` SSM slots (its pools' own
  /// pressure, or a device eviction that deleted nodes with host copies).
  virtual void host_evicted(std::uint64_t tokens, std::uint64_t slots) = 0;

  // --- faults the node survived (README, Reliability) ---
  /// One fault of `kind`: "l3_write_error" (a backup write failed), "l3_full" (a write
  /// refused for lack of space: a full disk, or a value larger than the store),
  /// "l3_read_error" (a prefetch read failed), "l3_corrupt_value" (a value failed its
  /// checksum: deleted, never served), "l3_timeout" (a prefetch ran past its deadline:
  /// slow I/O), "client_gone" (a session whose connection closed without close()),
  /// "shm_removed" (an instance's L1 shared-memory names were removed from under the node),
  /// "l3_corrupt_store" (the L3 index was corrupt at start: moved aside, the store empty),
  /// "l3_index_write_error" (the L3 index began to fail writing to its disk: RocksDB
  /// retries; what it holds in memory meanwhile is lost in a crash),
  /// "rpc_accept_error" (a streak of failed accepts began: out of file descriptors),
  /// "rpc_backpressure" (the server stopped reading a connection: too many calls
  /// unanswered or replies unread — a client that floods calls or does not read),
  /// "rpc_login_refused" (a TCP connection closed without a login: none within the login
  /// timeout, or too many connections waiting to log in).
  virtual void fault(std::string_view kind) = 0;
};

/// A sink that drops everything (tests, tools); a test overrides what it counts.
class null_metrics : public metrics_sink {
 public:
  void l1_match(std::uint64_t, std::uint64_t) override {}
  void queried_tokens(std::uint64_t) override {}
  void inserted_tokens(std::uint64_t) override {}
  void evicted(std::string_view, std::uint64_t, std::uint64_t) override {}
  void tombstones(std::string_view, std::uint64_t) override {}
  void forward_ops(std::uint64_t, std::uint64_t, std::uint64_t) override {}
  void command_error(std::string_view) override {}
  void fence_wait(double) override {}
  void pools(std::uint64_t, const pool_gauges&) override {}
  void instance_closed(std::uint64_t) override {}
  void sessions(std::int64_t) override {}
  void rpc(std::string_view, double) override {}
  void l2_hit(std::uint64_t) override {}
  void prefetch(std::string_view, std::uint64_t, std::uint64_t, double) override {}
  void tier_bytes(std::string_view, std::string_view, std::uint64_t, double) override {}
  void backup(double, bool) override {}
  void host_evicted(std::uint64_t, std::uint64_t) override {}
  void fault(std::string_view) override {}
};

}  // namespace hc
