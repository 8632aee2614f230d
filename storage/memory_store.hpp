#pragma once
// An L3 store in process memory (same contract as the RocksDB store; see l3_store.hpp).
// Values are stored encoded (value_codec.hpp), so a corrupted value is caught the same way.

#include <list>
#include <mutex>
#include <unordered_map>

#include "storage/l3_store.hpp"

namespace hc {

class memory_store final : public l3_store {
 public:
  explicit memory_store(std::size_t capacity_bytes);

  status set(l3_pool pool, std::string_view key, std::span<const std::byte> value) override;
  status get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) override;
  status get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) override;
  bool exists(l3_pool pool, std::string_view key) override;
  status erase(l3_pool pool, std::string_view key) override;
  result<std::size_t> erase_prefix(std::string_view prefix) override;
  l3_usage usage() const override;

  /// Test hook: overwrites the stored (encoded) bytes of a key, e.g. to corrupt them.
  /// not_found if the key is absent.
  status overwrite_stored(l3_pool pool, std::string_view key, std::vector<std::byte> bytes);

 private:
  struct entry {
    std::vector<std::byte> stored;
    std::list<std::string>::iterator lru;  ///< position in lru_ (front = most recent)
  };
  static std::string full_key(l3_pool pool, std::string_view key);
  void drop(std::unordered_map<std::string, entry>::iterator it);

  mutable std::mutex mu_;
  std::unordered_map<std::string, entry> map_;
  std::list<std::string> lru_;
  l3_usage usage_;
};

}  // namespace hc
