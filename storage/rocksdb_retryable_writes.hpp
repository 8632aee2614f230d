#pragma once
// The L3 index's file system: RocksDB's default one, except that an I/O error from a write
// (EIO from a disk with a bad spell, EDQUOT from a quota, a network volume that went away
// for a while) is marked retryable. RocksDB treats a flush that failed with a retryable
// error, without a WAL, as a soft error it recovers from on its own, flushing again every
// second until the disk writes (DBOptions::bgerror_resume_retry_interval); the store's
// writes go on meanwhile. Unmarked, the same error is fatal: RocksDB refuses every write
// until the process reopens it, and the index records it held in memory — no WAL — never
// reach the disk. Only storage/rocksdb_* sees RocksDB (architecture.md §6).
#include <rocksdb/file_system.h>

#include <memory>

namespace hc {

/// `base` (RocksDB's default file system when null) with its writable files' I/O errors
/// marked retryable; every other call and status passes through.
std::shared_ptr<rocksdb::FileSystem> retryable_write_errors(
    std::shared_ptr<rocksdb::FileSystem> base);

}  // namespace hc
