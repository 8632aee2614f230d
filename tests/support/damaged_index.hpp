#pragma once
// Damage to an L3 store's RocksDB index, for the tests of what the store and the node do
// with a corruption found only while the index is read.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace hc::test {

/// Overwrites 64 bytes in the middle of every table file of the closed store in `path`:
/// with a table of many data blocks (a few thousand records), RocksDB still opens the store
/// (the block holding the format marker is whole) and finds the corruption only while the
/// index is read. Call under ASSERT_NO_FATAL_FAILURE.
inline void damage_index_tables(const std::string& path) {
  for (const auto& f : std::filesystem::directory_iterator(path + "/index")) {
    if (f.path().extension() != ".sst") continue;
    const auto size = std::filesystem::file_size(f.path());
    std::FILE* out = std::fopen(f.path().c_str(), "r+b");
    ASSERT_NE(out, nullptr);
    std::fseek(out, static_cast<long>(size / 2), SEEK_SET);
    for (int i = 0; i < 64; ++i)
      std::fputc(0x5a ^ i, out);
    std::fclose(out);
  }
}

}  // namespace hc::test
