#pragma once
// The L3 store interface (architecture.md §4): values by key in two pools (KV pages and
// SSM states), shared by the node's own keys (instance fingerprint + namespace + chained
// page hash) and opaque keys of external clients. Implementations: memory_store (tests,
// and a node without a data dir) and the RocksDB store.
//
// Contract (tests/storage/store_contract_test.cpp runs it against every implementation):
//  * set is idempotent: setting an existing key keeps the stored value and refreshes its
//    recency (SGLang's file backend does the same);
//  * get returns exactly the bytes that were set; a stored value that fails its header
//    check (storage/value_codec.hpp) is deleted and reported as not_found — never served;
//  * the store holds at most `capacity_bytes` of values (header included) and evicts the
//    least recently used (set or get) values to make room; a single value larger than the
//    capacity is refused with out_of_memory;
//  * keys are non-empty; pools never see each other's keys.
//
// Thread safety: implementations are safe for concurrent use.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/common/status.hpp"

namespace hc {

enum class l3_pool : std::uint8_t { kv_page = 0, ssm_state = 1 };
inline constexpr std::size_t l3_pool_count = 2;

struct l3_usage {
  std::uint64_t bytes = 0;     ///< stored bytes (headers included)
  std::uint64_t values = 0;    ///< stored values, both pools
  std::uint64_t capacity = 0;  ///< capacity_bytes
  std::uint64_t evicted = 0;   ///< values evicted for room since start
  std::uint64_t corrupt = 0;   ///< values found corrupt (and deleted) since start
  bool loading = false;        ///< still reading its index: misses, refuses sets (loading_store)
  bool index_failing = false;  ///< its index cannot write to its disk (rocksdb_store)
  /// Times since start its index could not write to its disk (a fault each: while it
  /// cannot, what it holds in memory is lost in a crash)
  std::uint64_t index_failures = 0;
};

class l3_store {
 public:
  virtual ~l3_store() = default;

  virtual status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) = 0;
  /// The value's bytes (appended to `out` after clearing it), or not_found.
  virtual status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) = 0;
  /// The value's bytes written into `dst`, whose size must be the value's: parse_error
  /// naming both sizes otherwise (the value is kept). not_found and corrupt values as
  /// get(); after an error `dst` may hold any bytes. Stores that can serve straight into
  /// the caller's memory (the L2 host pools) override it; this one copies through get().
  virtual status get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst);
  /// Presence only (no checksum check; a corrupt value shows when it is read).
  virtual bool exists(l3_pool pool, std::string_view key) = 0;
  virtual status erase(l3_pool pool, std::string_view key) = 0;
  /// Erases every value of both pools whose key starts with `prefix`; returns how many.
  /// (An external client's clear: its keys share the "ext/<identity>/" prefix.)
  virtual result<std::size_t> erase_prefix(std::string_view prefix) = 0;
  virtual l3_usage usage() const = 0;

  /// Batched presence, in order.
  std::vector<bool> exists_many(l3_pool pool, std::span<const std::string> keys) {
    std::vector<bool> out;
    out.reserve(keys.size());
    for (const std::string& k : keys)
      out.push_back(exists(pool, k));
    return out;
  }
};

/// What every store's set() checks first: invalid_argument for an empty key,
/// out_of_memory for a value whose stored size (header included) exceeds `capacity`.
status l3_check_set(std::string_view key, std::size_t value_bytes, std::uint64_t capacity);

/// parse_error for a value of `have` bytes read into a buffer of `want` bytes.
error l3_size_mismatch(std::string_view key, std::size_t have, std::size_t want);

/// For stores serving get_into: the payload of the stored (encoded) bytes of `key` into
/// `dst`, header and checksum checked on the way. `corrupt` is set when the stored bytes
/// fail a check (the store deletes them); a `dst` of another size than the payload is the
/// caller's error (l3_size_mismatch) and leaves `corrupt` false.
status l3_decode_into(std::string_view key, std::span<const std::byte> stored,
                      std::span<std::byte> dst, bool& corrupt);

}  // namespace hc
