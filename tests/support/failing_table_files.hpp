#pragma once
// A RocksDB file system whose table files (*.sst: what a flush or a compaction writes)
// fail their writes with an I/O error while `failing` is set — a disk with a bad spell
// under the L3 index. Everything else passes through to the default file system.
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <memory>
#include <string>

namespace hc::test {

class failing_table_files final : public rocksdb::FileSystemWrapper {
 public:
  failing_table_files() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  static const char* kClassName() { return "failing_table_files"; }
  const char* Name() const override { return kClassName(); }

  /// While true, every write to a table file fails (EIO, as the kernel reports it).
  std::atomic<bool> failing{false};
  /// Table-file writes that failed so far.
  std::atomic<int> failures{0};

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(name, opts, out, dbg);
    if (s.ok() && name.size() > 4 && name.compare(name.size() - 4, 4, ".sst") == 0)
      *out = std::make_unique<file>(std::move(*out), *this);
    return s;
  }

 private:
  class file final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    file(std::unique_ptr<rocksdb::FSWritableFile> f, failing_table_files& fs)
        : FSWritableFileOwnerWrapper(std::move(f)), fs_(fs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_.failing) {
        ++fs_.failures;
        return rocksdb::IOStatus::IOError("injected: Input/output error");
      }
      return FSWritableFileOwnerWrapper::Append(data, o, dbg);
    }

   private:
    failing_table_files& fs_;
  };
};

/// An Env over `fs` (what rocksdb_store_config::env takes).
inline std::unique_ptr<rocksdb::Env> env_over(const std::shared_ptr<rocksdb::FileSystem>& fs) {
  return rocksdb::NewCompositeEnv(fs);
}

}  // namespace hc::test
