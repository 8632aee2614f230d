#pragma once
// The L3 store's format marker ("format" in its "metadata" column family), read or
// overwritten by opening the store's index with RocksDB itself while the store is closed —
// so a test can make a store of another release's format. Used by the store's tests and,
// through l3_format_marker_tool, by tests/hybridcached_process_test.sh.

#include <rocksdb/db.h>

#include <string>
#include <vector>

namespace hc::test {

/// The marker of the closed store in `store_path` as it was; given `replace`, the marker is
/// then overwritten by it (and flushed). On a failure (no index there, RocksDB refuses it,
/// no marker) returns "" with RocksDB's message in `error`; otherwise `error` is cleared.
inline std::string l3_format_marker(const std::string& store_path, const std::string* replace,
                                    std::string& error) {
  error.clear();
  rocksdb::Options opts;
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {"metadata", rocksdb::ColumnFamilyOptions()}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, store_path + "/index", families, &handles, &raw);
  if (!s.ok()) {
    error = "cannot open " + store_path + "/index: " + s.ToString();
    return {};
  }
  std::string marker;
  s = raw->Get(rocksdb::ReadOptions(), handles[1], "format", &marker);
  if (!s.ok()) error = "cannot read the marker: " + s.ToString();
  if (s.ok() && replace != nullptr) {
    s = raw->Put(rocksdb::WriteOptions(), handles[1], "format", *replace);
    if (s.ok()) s = raw->Flush(rocksdb::FlushOptions(), handles);
    if (!s.ok()) error = "cannot write the marker: " + s.ToString();
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    s = raw->DestroyColumnFamilyHandle(h);
    if (!s.ok() && error.empty()) error = "cannot close the index: " + s.ToString();
  }
  delete raw;
  return error.empty() ? marker : std::string();
}

}  // namespace hc::test
