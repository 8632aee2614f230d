#pragma once
// The L3 store (architecture.md §4): payloads in append-only segment files
// (storage/value_segments.hpp), their index in an embedded RocksDB — one record per value
// (segment, offset, stored size, access sequence, XXH3-64 of the payload) in a "metadata"
// column family beside the format marker. A put is one pwrite of the payload plus a small
// RocksDB write; a get is an in-memory index lookup and one pread into the caller's buffer. Same
// contract as every l3_store (see l3_store.hpp; tests/storage/store_contract_test.cpp runs it
// against this class).
//
// Durability: cache data is reconstructible, so index writes skip the WAL (floors.md §7).
// Every `flush_interval` when something was written (and at close) the segments written
// since are fdatasync'ed, then the index memtable is flushed: a crash (kill -9, power loss)
// loses at most the writes of the last interval — never a value's integrity: an index
// record reaches disk after the bytes it names, and every value carries its own checksum
// (tools/crash_test.sh checks both). Values whose record was lost are dead space.
//
// Checksums: a value's XXH3 is checked on its first read after the store opened (what a
// crash could have torn or the disk could have lost) and when garbage collection copies it;
// a value written by this process was hashed from the caller's bytes and is then served
// without hashing again, unless `verify_every_read` (BENCHMARKS.md §5.0 has both). Sizes
// count the value header of value_codec.hpp (24 bytes), which the index record holds.
//
// Recency and capacity: an in-memory index (key → location, size, access sequence),
// rebuilt at open from the metadata records, orders the LRU; `capacity_bytes` counts live
// values (headers included) and `index_memory_bytes` bounds the index itself: small values
// cost more index memory than value bytes (the 10^8-operation hcsim run of toy-sized values
// grew a node to 23 GB of index under a 64 GiB capacity), so the least recently used values
// are evicted when either limit is reached.
//
// Space: a segment whose values are all gone is removed at once; one that is at least
// `gc_dead_fraction` dead is compacted by the background thread (its live values copied to
// the active segment, then it is removed). The directory holds about capacity /
// (1 - gc_dead_fraction) at worst, plus the active segment.
//
// Thread safety: safe for concurrent use (the index has a mutex; segment I/O runs outside
// it, and so do the RocksDB writes of a put, an erase, a clear, the recency records and a
// compaction's moves, in the order of the mutex's turns: write_index_unlocking).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "storage/l3_index.hpp"
#include "storage/l3_store.hpp"
#include "storage/value_segments.hpp"

namespace rocksdb {
class DB;
class Env;
class Status;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace hc {

class index_health;

struct rocksdb_store_config {
  /// Directory of the database; created if missing. Required.
  std::string path;
  /// Bytes of values (headers included) the store keeps before evicting. Default 64 GiB.
  std::uint64_t capacity_bytes = 64ull << 30;
  /// Memory the in-memory index may take (an estimate per value: index_bytes_per_value)
  /// before the least recently used values are evicted, whatever capacity_bytes allows.
  /// Default 1 GiB (≈ 4.7 M values with SGLang's 64-hex-digit page keys); 0 = no limit.
  std::uint64_t index_memory_bytes = 1ull << 30;
  /// Size at which a value segment is sealed and a new one started. Default 256 MiB.
  std::uint64_t segment_bytes = 256ull << 20;
  /// A sealed segment at least this fraction dead (values evicted, erased or lost) is
  /// compacted in the background. Default 0.5 (each live byte copied at most once per
  /// byte reclaimed); 1.0 = only segments with nothing live are reclaimed.
  double gc_dead_fraction = 0.5;
  /// Check every read's checksum, not only a value's first read after open. Default off.
  bool verify_every_read = false;
  /// Memtable size of the index; index records are small (~60 B). Default 32 MiB.
  std::uint64_t write_buffer_bytes = 32ull << 20;
  /// A background flush of the memtables this often when something was written since the
  /// last one: bounds what a crash loses. 0 = none (only full memtables and close flush).
  /// Default 5 s.
  std::chrono::milliseconds flush_interval{5000};
  /// O_DIRECT for the value segments' reads and writes: values bypass the page cache,
  /// which then stays for the node's other files; reads always go to the device. Default
  /// off (buffered I/O; BENCHMARKS.md §5 has both).
  bool direct_io = false;
  /// Recency records (LRU order across restarts) are written by every background flush
  /// and close, and earlier once this many values were touched since the last write (a
  /// value touched twice counts once: a hot set costs one record per value per
  /// flush_interval, not one per get). The background thread writes them, 16 per
  /// turn of the store's lock (the RocksDB write made after it), so no get waits for a
  /// whole batch (BENCHMARKS.md §8.2-§8.3);
  /// a get writes some itself only once 4× this many are pending (the thread busy
  /// compacting). A crash loses at most the pending ones, which only makes some values look
  /// older. Default 16384 (128 KiB of pending pointers); at most 2^28.
  std::size_t recency_batch = 16384;
  /// What open() does with an index RocksDB reports corrupt (a damaged CURRENT, MANIFEST or
  /// table file: bit rot, a disk that lied about a write) or whose files are not all there
  /// (a MANIFEST or table file deleted): false, fail with io_error naming
  /// the corruption; true, move the store directory aside to `path + ".corrupt"`
  /// (replacing an older one), keep its index there for inspection and delete its values,
  /// and open an empty store — cached values can be recomputed, a node that cannot start
  /// cannot serve. Default false.
  bool quarantine_corrupt = false;
  /// Bytes to leave free on the store's filesystem (nginx's proxy_cache min_free): while
  /// the filesystem has less, the store's capacity shrinks to what leaves them (the least
  /// recently used values go first), and grows back, up to capacity_bytes, as space
  /// returns. Checked at open, at every timed flush and after every min_free_bytes / 4
  /// (at most 64 MiB) of values written. 0 = off: only a full disk makes room (a put that
  /// finds none drops the oldest segment's values). The log says when the capacity falls
  /// 1/64 or more short of capacity_bytes, when that deepens by 1/8, and when it is back.
  /// Default 0.
  std::uint64_t min_free_bytes = 0;
  /// The RocksDB environment of the index (its files, threads, clock); null = RocksDB's
  /// default. A test hook: a file system that fails writes, as a bad disk does.
  rocksdb::Env* env = nullptr;
};

/// How the index is read at open (rocksdb_store::load). All optional.
struct rocksdb_load_options {
  /// Set (by another thread) to give up: load() then fails with io_error "stopped" at the
  /// next 65,536 records, having changed nothing on disk. Null = never.
  const std::atomic<bool>* stop = nullptr;
  /// Called from the loading thread every `progress_every` index records read, with the
  /// count so far and RocksDB's estimate of the total (0 if it has none).
  std::function<void(std::uint64_t records, std::uint64_t estimate)> progress;
  std::uint64_t progress_every = 1u << 20;
};

/// The index memory charged for a value under `key`: its record (entry, hash, recency
/// and segment links, the key's bytes), malloc's block overhead and its share of the
/// table (storage/l3_index.hpp), rounded up: k + 119 bytes at most for the block, 10-21
/// for the table. `L3Index.HeapPerValueIsWithinItsCharge` measures it (glibc malloc). It
/// was 2k + 256 for a hash map of strings and a recency list, which took less (254 bytes
/// for an 84-byte key: BENCHMARKS.md §13.1), and k + 128 before the segment links.
constexpr std::uint64_t index_bytes_per_value(std::size_t key_bytes) noexcept {
  return static_cast<std::uint64_t>(key_bytes) + 144;
}

class rocksdb_store final : public l3_store {
 public:
  /// Opens (or creates) the database. Errors: invalid_config (empty path, a directory
  /// written by another format), io_error (RocksDB could not open it — e.g. another
  /// process holds its lock, or its index is corrupt and cfg.quarantine_corrupt is off;
  /// the message says what RocksDB said).
  static result<std::unique_ptr<rocksdb_store>> open(const rocksdb_store_config& cfg,
                                                     const rocksdb_load_options& load = {});
  /// open() in two steps, for a caller that serves while the index is read (the index of
  /// millions of values takes seconds; BENCHMARKS.md §13): open_unloaded opens the
  /// database and the segment directory and checks the format — every error of open()
  /// but those found reading the index (a corrupt table file) — and load() then reads the
  /// index, on any thread. Nothing but load(), index_records_estimate(), quarantined() and
  /// destruction may be called on a store that was not loaded. load() takes the store: on
  /// a corruption it hands back a fresh, empty store in its place when
  /// cfg.quarantine_corrupt says so, as open() does; stopped (options.stop), it fails
  /// having deleted nothing — the clean-up that ends a load (records naming lost bytes,
  /// segments no record names) needs the whole index.
  static result<std::unique_ptr<rocksdb_store>> open_unloaded(const rocksdb_store_config& cfg);
  static result<std::unique_ptr<rocksdb_store>> load(std::unique_ptr<rocksdb_store> unloaded,
                                                     const rocksdb_load_options& options = {});
  /// True while the index cannot write to its disk (a flush failed: RocksDB retries it,
  /// every second for an I/O error, as space returns for a full disk); L3 writes may fail
  /// meanwhile. The log says when it starts and ends.
  bool index_failing() const noexcept;
  /// RocksDB's estimate of the index records (0 if it has none): what load() will read.
  std::uint64_t index_records_estimate() const;
  /// What open() or load() found corrupt and moved aside (cfg.quarantine_corrupt), or "".
  const std::string& quarantined() const noexcept { return quarantined_; }
  ~rocksdb_store() override;

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override;
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override;
  /// One preadv of header and payload straight into `dst` (see the file comment for when
  /// the checksum is checked).
  status get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) override;
  bool exists(l3_pool pool, std::string_view key) override;
  status erase(l3_pool pool, std::string_view key) override;
  result<std::size_t> erase_prefix(std::string_view prefix) override;
  l3_usage usage() const override;

  /// Syncs the segments, flushes the index and closes the database (also done by the
  /// destructor).
  status close();

  /// Bytes in the value segments, live and dead (what the directory holds besides the
  /// index), and the segments' count.
  std::uint64_t segment_bytes_on_disk() const;
  std::size_t segment_count() const;
  /// Runs one garbage-collection pass now (the background thread does it on its own);
  /// returns the segments removed.
  std::size_t collect_garbage();
  /// How many of a segment's values a compaction lists under the store's lock at a time
  /// (it then moves them one lock turn each): what a compaction holds is one such batch.
  static constexpr std::size_t gc_batch_values = 4096;
  /// Values garbage collection moved to the active segment since open.
  std::uint64_t values_moved() const;
  /// Times a full disk made a put drop the values of the oldest segment, since open.
  std::uint64_t disk_full_evictions() const;
  /// Checks the filesystem's free space against cfg.min_free_bytes now (see there).
  void keep_min_free();

  /// Values touched whose recency records are not written yet.
  std::size_t recency_pending() const;
  /// Test hook: l3_index::check() of the index (empty when every value is listed under its
  /// segment).
  std::string check_index() const;
  /// Test hook: replaces the stored value of a key by `bytes`, an encoded value (header +
  /// payload, value_codec.hpp) — e.g. one with a flipped byte: bytes that decode are served
  /// from now on; bytes that do not are a checksum failure at the next read.
  status overwrite_stored(l3_pool pool, std::string_view key, std::span<const std::byte> bytes);
  /// Test hook: the next `n` writes to the index (a put's record, a delete, a batch of
  /// recency records, a compaction's move) fail as an I/O error would.
  void fail_index_writes(std::size_t n);
  /// Test hook: `hook` runs once, in the next index write made with the store's lock
  /// dropped (write_index_unlocking: a recency batch, a compaction's move, a put, an
  /// erase, a drop), between the lock's release and the write — where another call can run.
  void before_next_unlocked_write(std::function<void()> hook);
  /// Test hook: while held, the background thread starts no work (recency batches,
  /// compaction, timed flushes), as a thread busy with a long compaction starts none;
  /// close() still stops it.
  void hold_background(bool held);

 private:
  using entry = l3_value_entry;
  using record = l3_index::record;

  rocksdb_store() = default;
  /// open_unloaded() of cfg.path as it is; `corrupt` is set when RocksDB reported a
  /// corruption.
  static result<std::unique_ptr<rocksdb_store>> open_as_is(const rocksdb_store_config& cfg,
                                                           bool& corrupt);
  /// Moves a store that failed with `why` (a corruption) aside and opens an empty one in
  /// its place (cfg.quarantine_corrupt). The failed store must be closed already.
  static result<std::unique_ptr<rocksdb_store>> quarantine(const rocksdb_store_config& cfg,
                                                           const error& why);
  /// Reads the index into memory, then starts the background thread; `corrupt` as for
  /// open_as_is.
  status load_index(bool& corrupt, const rocksdb_load_options& options);
  /// Takes the value `full` out of the index (its space is dead) and writes its delete
  /// with mu_ (`lk`) dropped (write_index_unlocking; `lk` is unlocked on return).
  status drop_unlocking(std::unique_lock<std::mutex>& lk, const std::string& full);
  /// Takes r out of the index (its space is dead) and adds its record's delete to `batch`.
  void unindex_locked(record* r, rocksdb::WriteBatch& batch);
  /// Makes r the most recent value and puts it on the recency list (recency_pending_).
  /// When the background thread is far behind (4 batches pending) it writes a chunk of
  /// them itself, with mu_ (`lk`) dropped: `lk` may be unlocked on return.
  void touch_unlocking(std::unique_lock<std::mutex>& lk, record* r);
  /// Takes r off the recency list (it is being erased).
  void unlist_recency_locked(record* r) noexcept;
  /// Adds to `batch` the recency records of up to `most` pending values (all by default),
  /// taking them off the list; true if some are still pending.
  bool batch_recency_locked(rocksdb::WriteBatch& batch, std::size_t most = SIZE_MAX);
  /// Writes every pending recency record, recency_chunk per turn of the store's lock, each
  /// chunk's RocksDB write made after the lock is dropped (write_index_unlocking).
  void drain_recency();
  /// Writes `batch` to the index, mu_ held throughout. Every index write after open goes
  /// through here or write_index_unlocking.
  rocksdb::Status write_index_locked(rocksdb::WriteBatch& batch);
  /// Writes `batch` to the index after dropping mu_ (`lk`, unlocked on return), still in
  /// the order of the lock's turns: index_write_mu_ is taken before mu_ is dropped, so the
  /// write lands after every index write of an earlier turn and before every one of a
  /// later turn. Gets then do not wait for RocksDB (a write that meets a memtable switch
  /// or RocksDB's flush took 0.3-0.9 ms here: BENCHMARKS.md §8.3). db_ stays open
  /// meanwhile: close() takes index_write_mu_ after mu_, so it waits for the write.
  rocksdb::Status write_index_unlocking(std::unique_lock<std::mutex>& lk,
                                        rocksdb::WriteBatch& batch);
  /// The write itself, index_write_mu_ held (nothing for an empty batch).
  rocksdb::Status write_index_now(rocksdb::WriteBatch& batch);
  /// Recency records taken per turn of the lock: ~0.2 µs each under it (the record read,
  /// the batch appended); 16 rather than 64 gave gets a lower p99.9 (BENCHMARKS.md §8.3).
  static constexpr std::size_t recency_chunk = 16;
  /// Reads the value of `key` into the buffer `dst_for(payload bytes) -> result<span>`
  /// gives (its error passes through, the value kept); the not_found / corrupt handling
  /// shared by get and get_into (a corrupt value is deleted and reported as not_found).
  template <class DstFor>
  status read_value(l3_pool pool, std::string_view key, DstFor&& dst_for);
  /// The disk is full: drops every value of the oldest segment (sealing it first if it is
  /// the active one), whatever their recency, so that its file goes — a log-structured
  /// store frees disk space a segment at a time. False if no segment holds a value.
  bool free_oldest_segment_locked();
  /// Takes out of the index (unindex_locked) the values of `segment` whose key starts with
  /// `prefix` ("" = all), from the index's segment list; returns how many.
  std::size_t unindex_segment_locked(std::uint64_t segment, std::string_view prefix,
                                     rocksdb::WriteBatch& batch);
  /// keep_min_free with mu_ held: lowers the capacity to what the disk allows and adds the
  /// deletes of the values that evicts to `evicted`, for the caller to write.
  void keep_min_free_into_locked(rocksdb::WriteBatch& evicted);
  /// keep_min_free_into_locked, its deletes written with mu_ (`lk`) dropped (`lk` is
  /// unlocked on return).
  void keep_min_free_unlocking(std::unique_lock<std::mutex>& lk);
  /// Publishes a value just appended at `at`: evicts for room, puts it in the index, and
  /// writes its index record with mu_ (`lk`) dropped; a failed write takes it out again.
  status publish(std::unique_lock<std::mutex>& lk, const std::string& full, std::uint64_t size,
                 value_location at, std::uint64_t checksum);
  /// Adds the index record of `r` to `batch`.
  void batch_record(rocksdb::WriteBatch& batch, const record* r) const;
  void add_live_locked(value_location at, std::uint64_t size);
  void remove_live_locked(value_location at, std::uint64_t size);
  /// Sealed segments at least gc_dead_fraction dead (or wholly dead), most dead first.
  std::vector<std::uint64_t> gc_candidates_locked() const;
  /// Copies the live values of `segment` to the active segment, then removes it; false if
  /// it had to stop (an I/O error, the store closing, values it could not move).
  bool compact(std::uint64_t segment);
  /// A value a compaction is to move: its key (in a buffer beside the batch) and its entry
  /// as listed.
  struct gc_value {
    std::size_t key_at = 0;
    std::size_t key_size = 0;
    entry e;
  };
  /// Lists up to gc_batch_values of `segment`'s values into `batch` (their keys into
  /// `keys`), in file order; false if the store is closed.
  bool list_gc_batch(std::uint64_t segment, std::vector<gc_value>& batch, std::string& keys);
  /// What moving one value did: it left the segment (copied, dropped as corrupt, or gone
  /// meanwhile), it stayed (its copy's segment vanished), or the compaction must stop (an
  /// I/O error, the store closed).
  enum class gc_move { left, stayed, stop };
  /// Copies the value `full` (listed as `e`) of `segment` to the active segment and points
  /// the index at the copy, unless it changed meanwhile; `buf` is scratch.
  gc_move move_live_value(segment_file& seg, std::uint64_t segment, std::string_view full,
                          const entry& e, std::vector<std::byte>& buf);
  /// Evicts (unindex_locked, counted) the least recently used values until `bytes` more
  /// value bytes and `index` more index bytes fit both limits; their deletes go to `batch`.
  void evict_into_locked(std::uint64_t bytes, std::uint64_t index, rocksdb::WriteBatch& batch);
  /// evict_into_locked, written at once with mu_ held (open(), before anything else runs).
  status evict_for_locked(std::uint64_t bytes, std::uint64_t index);
  /// The background thread (flush_interval): syncs and flushes when dirty_, compacts
  /// segments when gc_wanted_, until close().
  void flush_loop();
  void wake_gc();

  rocksdb_store_config cfg_;
  std::string quarantined_;               ///< see quarantined()
  std::unique_ptr<rocksdb::Env> env_;     ///< the index's files (outlives db_)
  std::shared_ptr<index_health> health_;  ///< the index's background errors (a listener)
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  rocksdb::ColumnFamilyHandle* default_ = nullptr;
  std::unique_ptr<value_segments> segments_;

  mutable std::mutex mu_;
  l3_index index_;  ///< the values (key: pool byte + key), least recent first
  std::uint64_t next_seq_ = 1;
  l3_usage usage_;
  std::uint64_t index_bytes_ = 0;  ///< sum of index_bytes_per_value over the index
  /// The values whose recency records are to be written (e.recency_slot - 1 is a value's
  /// place here; an erased value is taken off).
  std::vector<record*> recency_pending_;
  bool recency_woken_ = false;  ///< the background thread was asked to write them
  std::mutex index_write_mu_;   ///< orders the index's writes (write_index_unlocking); after mu_
  std::size_t failing_index_writes_ = 0;       ///< fail_index_writes(); guarded by index_write_mu_
  std::function<void()> unlocked_write_hook_;  ///< before_next_unlocked_write(); likewise
  std::uint64_t erasures_ = 0;  ///< values erased from index_ so far (a reader's record pointer
                                ///< stays valid while this does not change)
  std::unordered_map<std::uint64_t, std::uint64_t> live_;  ///< segment → live footprint
  std::uint64_t moved_ = 0;                                ///< values_moved()
  std::uint64_t disk_full_evictions_ = 0;                  ///< disk_full_evictions()
  std::uint64_t written_since_space_check_ = 0;            ///< bytes appended since
  bool logged_short_ = false;          ///< the log said the capacity is short for space
  std::uint64_t logged_capacity_ = 0;  ///< the capacity the log said then

  std::atomic<bool> dirty_{false};  ///< written since the last background flush
  std::mutex flush_mu_;
  std::condition_variable flush_cv_;
  bool stopping_ = false;         ///< guarded by flush_mu_
  bool gc_wanted_ = false;        ///< guarded by flush_mu_
  bool recency_wanted_ = false;   ///< guarded by flush_mu_
  bool background_held_ = false;  ///< hold_background(); guarded by flush_mu_
  std::mutex gc_mu_;              ///< one compaction pass at a time
  std::thread flusher_;
};

}  // namespace hc
