#pragma once
// The L3 store on an embedded RocksDB (architecture.md §4): integrated BlobDB for the large
// values, one column family per pool ("pages", "states") and one for metadata (format
// marker and one recency record per value). Same contract as every l3_store (see
// l3_store.hpp; tests/storage/store_contract_test.cpp runs it against this class).
//
// Durability: cache data is reconstructible, so writes skip the WAL (floors.md §7: the WAL
// doubles the bytes written). What is in the memtables reaches disk on close(), on
// RocksDB's own flushes (a full memtable) and every `flush_interval` when something was
// written; a crash (kill -9, power loss) loses at most the writes of the last interval —
// never a value's integrity, because a value and its recency record are written in one
// batch and every value carries its own checksum (tools/crash_test.sh checks both).
//
// Recency and capacity: an in-memory index (key → size, access sequence), rebuilt at open
// from the metadata column family, orders the LRU; `capacity_bytes` counts live values
// (headers included) and `index_memory_bytes` bounds the index itself: small values cost
// more index memory than value bytes (the 10^8-operation hcsim run of toy-sized values
// grew a node to 23 GB of index under a 64 GiB capacity), so the least recently used
// values are evicted when either limit is reached. Space of deleted blobs is reclaimed by
// blob garbage collection during compaction, so the directory can briefly exceed the
// capacity.
//
// Thread safety: safe for concurrent use (RocksDB is; the index has a mutex).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "storage/l3_store.hpp"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
}  // namespace rocksdb

namespace hc {

struct rocksdb_store_config {
  /// Directory of the database; created if missing. Required.
  std::string path;
  /// Bytes of values (headers included) the store keeps before evicting. Default 64 GiB.
  std::uint64_t capacity_bytes = 64ull << 30;
  /// Memory the in-memory index may take (an estimate per value: index_bytes_per_value)
  /// before the least recently used values are evicted, whatever capacity_bytes allows.
  /// Default 1 GiB (≈ 3.5 M values with SGLang's 64-hex-digit page keys); 0 = no limit.
  std::uint64_t index_memory_bytes = 1ull << 30;
  /// Values at least this large go to blob files (KV pages and SSM states usually do).
  /// Default 4 KiB.
  std::uint64_t min_blob_bytes = 4096;
  /// Memtable size per column family; puts stall while a full memtable flushes
  /// (floors.md §7), so it stays moderate. Default 32 MiB.
  std::uint64_t write_buffer_bytes = 32ull << 20;
  /// A background flush of the memtables this often when something was written since the
  /// last one: bounds what a crash loses. 0 = none (only full memtables and close flush).
  /// Default 5 s.
  std::chrono::milliseconds flush_interval{5000};
  /// O_DIRECT for value reads and for flush/compaction writes (RocksDB's use_direct_reads
  /// and use_direct_io_for_flush_and_compaction): values bypass the page cache, which then
  /// stays for the node's other files; reads always go to the device. Default off
  /// (buffered I/O; BENCHMARKS.md §5 has both).
  bool direct_io = false;
  /// Recency records (LRU order across restarts) are written in batches of this many
  /// touches, and by every background flush and close; a crash loses at most these, which
  /// only makes some values look older. 1 = one write per get (the old behaviour).
  /// Default 256.
  std::size_t recency_batch = 256;
};

/// The index memory charged for a value under `key` (its key twice — hash map and recency
/// order — plus their nodes and the allocator's overhead). An estimate, a little above
/// what was measured (RSS growth over 1 M values, glibc malloc, 2026-11-24): 236 / 332 /
/// 460 bytes per value for 17 / 65 / 120-byte keys, estimated 258 / 354 / 464.
constexpr std::uint64_t index_bytes_per_value(std::size_t key_bytes) noexcept {
  return 2 * static_cast<std::uint64_t>(key_bytes) + 224;
}

class rocksdb_store final : public l3_store {
 public:
  /// Opens (or creates) the database. Errors: invalid_config (empty path, a directory
  /// written by another format), io_error (RocksDB could not open it — e.g. another
  /// process holds its lock; the message says what RocksDB said).
  static result<std::unique_ptr<rocksdb_store>> open(const rocksdb_store_config& cfg);
  ~rocksdb_store() override;

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override;
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override;
  /// Served from RocksDB's pinned value straight into `dst`, the checksum checked on the
  /// way (one pass over the bytes).
  status get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) override;
  bool exists(l3_pool pool, std::string_view key) override;
  status erase(l3_pool pool, std::string_view key) override;
  result<std::size_t> erase_prefix(std::string_view prefix) override;
  l3_usage usage() const override;

  /// Flushes the memtables and closes the database (also done by the destructor).
  status close();

  /// Test hook: replaces the stored (encoded) bytes of a key, e.g. to corrupt them.
  status overwrite_stored(l3_pool pool, std::string_view key, std::span<const std::byte> bytes);

 private:
  struct entry {
    std::uint64_t size = 0;  ///< stored bytes (header included)
    std::uint64_t seq = 0;   ///< access sequence: larger = more recent
  };
  using index_map = std::unordered_map<std::string, entry>;  // key: pool byte + key

  rocksdb_store() = default;
  status load_index();
  rocksdb::ColumnFamilyHandle* family(l3_pool pool) const;
  /// Deletes value + recency record of the given index entries in one batch.
  status drop_locked(const std::vector<std::string>& full_keys);
  void touch_locked(index_map::iterator it);
  /// Writes the recency records of the touched values still in the index (one batch).
  void write_recency_locked();
  /// Reads the stored bytes of `key` and hands them to `use(stored, bool& corrupt) ->
  /// status`; the not_found / corrupt handling shared by get and get_into (a value `use`
  /// finds corrupt is deleted and reported as not_found; its other errors pass through).
  template <class Use>
  status read_value(l3_pool pool, std::string_view key, Use&& use);
  /// The least recently used values to drop so that `bytes` more value bytes and `index`
  /// more index bytes fit both limits.
  std::vector<std::string> victims_locked(std::uint64_t bytes, std::uint64_t index) const;
  /// The background flusher (flush_interval): flushes when dirty_, until close().
  void flush_loop();

  rocksdb_store_config cfg_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* pages_ = nullptr;
  rocksdb::ColumnFamilyHandle* states_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_ = nullptr;

  mutable std::mutex mu_;
  index_map index_;
  std::map<std::uint64_t, std::string> by_seq_;  ///< seq → full key (front = least recent)
  std::uint64_t next_seq_ = 1;
  l3_usage usage_;
  std::uint64_t index_bytes_ = 0;             ///< sum of index_bytes_per_value over the index
  std::vector<std::string> recency_pending_;  ///< full keys touched since the last batch

  std::atomic<bool> dirty_{false};  ///< written since the last background flush
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  bool stopping_ = false;  ///< guarded by flush_mu_
  std::thread flusher_;
};

}  // namespace hc
