#pragma once
// Append-only segment files for the L3 store's values (architecture.md §4): the RocksDB store
// keeps its index (key → segment, offset, size, checksum) in RocksDB and the payloads here,
// back to back, so a put is one `pwrite` at the end of the active segment and a get is one
// `pread` into the caller's buffer — no copy through a memtable, a blob file or a pinned
// slice (BENCHMARKS.md §5.0 measured those at 0.14–0.34× of a plain write / read). Payloads
// of whole pages (KV pages, SSM states) stay page-aligned in the file, which the page cache
// serves fastest (a 24-byte header in front of each made reads 40 % slower).
//
// Files are `<dir>/<16 hex digits>.seg`, numbered in creation order. Appends go to the
// active segment until it holds `segment_bytes`, then a new one starts; a segment is never
// written again once another is active (after a restart, writes start a new one). Space is
// reclaimed by whoever owns the index: it knows which records are live, copies them out of
// a mostly dead segment and removes it (rocksdb_store's garbage collection).
//
// Direct I/O (O_DIRECT): records start at 4 KiB boundaries and are written and read whole
// blocks at a time — straight from / into the caller's buffer when it is 4 KiB-aligned and
// a multiple of 4 KiB long, else through an aligned bounce buffer (one copy); buffered I/O
// packs records back to back and copies nothing in user space.
//
// Durability: appends reach the page cache; sync() makes them durable (fdatasync of every
// segment written since the last sync). The owner syncs before it makes the index that
// points at them durable, so a persisted index entry never names bytes that were lost —
// and if it does (a torn write), the value's checksum (kept in the index) turns it into a
// miss.
//
// Thread safety: safe for concurrent use. A reader holds the segment it reads (a shared
// pointer): a segment removed meanwhile is unlinked but stays readable until released.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/common/status.hpp"

namespace hc {

/// The store's error for a system call on its segments that failed with `err`:
/// out_of_memory for no space (ENOSPC, or EDQUOT: a quota — the store then drops its oldest
/// values to make room), io_error otherwise; the message is `what` and the reason.
error segment_io_error(std::string_view what, int err);

struct value_location {
  std::uint64_t segment = 0;  ///< 0 = none; segments are numbered from 1
  std::uint64_t offset = 0;
  friend bool operator==(const value_location&, const value_location&) = default;
};

/// One open segment file.
class segment_file {
 public:
  segment_file(std::uint64_t id, int fd, std::uint64_t size, bool direct) noexcept;
  ~segment_file();
  segment_file(const segment_file&) = delete;
  segment_file& operator=(const segment_file&) = delete;

  std::uint64_t id() const noexcept { return id_; }
  /// Bytes in the file (records and, with direct I/O, their padding).
  std::uint64_t size() const noexcept { return size_.load(std::memory_order_acquire); }

  /// Reads `dst.size()` bytes at `offset` into `dst`. parse_error if the file ends first (a
  /// torn or truncated record), io_error if the read fails.
  status read(std::uint64_t offset, std::span<std::byte> dst) const;
  /// Writes `bytes` at `offset` over what is there (a test hook that corrupts a record).
  status overwrite(std::uint64_t offset, std::span<const std::byte> bytes);

 private:
  friend class value_segments;
  std::uint64_t id_;
  int fd_;
  std::atomic<std::uint64_t> size_;
  bool direct_;
  std::atomic<bool> unsynced_{false};
};

struct value_segments_config {
  std::string dir;                             ///< created if missing
  std::uint64_t segment_bytes = 256ull << 20;  ///< a segment is sealed past this size
  bool direct_io = false;                      ///< O_DIRECT for every segment read and write
};

class value_segments {
 public:
  /// Opens the segments in `dir` (creating it if missing). io_error if the directory or a
  /// segment cannot be opened; invalid_argument if direct I/O is asked for on a filesystem
  /// that refuses it (the message says which).
  static result<std::unique_ptr<value_segments>> open(const value_segments_config& cfg);
  ~value_segments();

  /// Appends `bytes` as one record; returns where it starts. out_of_memory when the disk is
  /// full, io_error for other failures (the space the record took is dead).
  result<value_location> append(std::span<const std::byte> bytes);
  /// The segment `id`, or null if there is none (removed, or never existed).
  std::shared_ptr<segment_file> segment(std::uint64_t id) const;
  /// Ids and sizes of every segment, oldest first.
  std::map<std::uint64_t, std::uint64_t> sizes() const;
  /// The segment appends go to now (0 = none yet). It is never garbage collected.
  std::uint64_t active() const;
  /// Unlinks segment `id` (readers that hold it still read it). No-op for the active one.
  void remove(std::uint64_t id);
  /// Ends the active segment: the next append starts a new one, and the old one can be
  /// removed (appends already placed in it still complete).
  void seal();
  /// fdatasync of every segment appended to since the last sync.
  status sync();
  /// Bytes a record of `bytes` takes in a segment (its padding with direct I/O).
  std::uint64_t footprint(std::uint64_t bytes) const noexcept;

 private:
  explicit value_segments(value_segments_config cfg) : cfg_(std::move(cfg)) {}
  result<std::shared_ptr<segment_file>> open_file(std::uint64_t id, bool create) const;
  std::string path_of(std::uint64_t id) const;

  value_segments_config cfg_;
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::shared_ptr<segment_file>> files_;
  std::shared_ptr<segment_file> active_;
  std::uint64_t next_id_ = 1;
  std::uint64_t tail_ = 0;  ///< next append offset in active_ (reserved, maybe not written yet)
};

}  // namespace hc
