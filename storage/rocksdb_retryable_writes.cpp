#include "storage/rocksdb_retryable_writes.hpp"

#include <string>
#include <utility>

namespace hc {
namespace {

/// An I/O error (not a missing space, which RocksDB already retries, nor a corruption) as
/// a retryable one.
rocksdb::IOStatus retryable(rocksdb::IOStatus s) {
  if (s.IsIOError() && !s.IsNoSpace()) s.SetRetryable(true);
  return s;
}

class retrying_file final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  explicit retrying_file(std::unique_ptr<rocksdb::FSWritableFile> f)
      : FSWritableFileOwnerWrapper(std::move(f)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Append(data, o, dbg));
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Append(data, o, info, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, std::uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::PositionedAppend(data, offset, o, info, dbg));
  }
  rocksdb::IOStatus Truncate(std::uint64_t size, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Truncate(size, o, dbg));
  }
  rocksdb::IOStatus Close(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Close(o, dbg));
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Flush(o, dbg));
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Sync(o, dbg));
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Fsync(o, dbg));
  }
  rocksdb::IOStatus RangeSync(std::uint64_t offset, std::uint64_t nbytes,
                              const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::RangeSync(offset, nbytes, o, dbg));
  }
  rocksdb::IOStatus Allocate(std::uint64_t offset, std::uint64_t len, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
    return retryable(FSWritableFileOwnerWrapper::Allocate(offset, len, o, dbg));
  }
};

class retrying_fs final : public rocksdb::FileSystemWrapper {
 public:
  explicit retrying_fs(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)) {}
  static const char* kClassName() { return "hybridcache-retryable-writes"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* out,
                                    rocksdb::IODebugContext* dbg) override {
    return wrap(target()->NewWritableFile(name, o, out, dbg), out);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* out,
                                       rocksdb::IODebugContext* dbg) override {
    return wrap(target()->ReopenWritableFile(name, o, out, dbg), out);
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* out,
                                      rocksdb::IODebugContext* dbg) override {
    return wrap(target()->ReuseWritableFile(name, old, o, out, dbg), out);
  }

 private:
  static rocksdb::IOStatus wrap(rocksdb::IOStatus s,
                                std::unique_ptr<rocksdb::FSWritableFile>* out) {
    if (s.ok() && *out) *out = std::make_unique<retrying_file>(std::move(*out));
    return retryable(std::move(s));
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> retryable_write_errors(
    std::shared_ptr<rocksdb::FileSystem> base) {
  if (!base) base = rocksdb::FileSystem::Default();
  return std::make_shared<retrying_fs>(std::move(base));
}

}  // namespace hc
