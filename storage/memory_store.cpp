#include "storage/memory_store.hpp"

#include "storage/value_codec.hpp"

namespace hc {

memory_store::memory_store(std::size_t capacity_bytes) {
  usage_.capacity = capacity_bytes;
}

std::string memory_store::full_key(l3_pool pool, std::string_view key) {
  std::string k(1, static_cast<char>(pool));
  k.append(key);
  return k;
}

void memory_store::drop(std::unordered_map<std::string, entry>::iterator it) {
  usage_.bytes -= it->second.stored.size();
  usage_.values -= 1;
  lru_.erase(it->second.lru);
  map_.erase(it);
}

status memory_store::set(l3_pool pool, std::string_view key, std::span<const std::byte> value) {
  if (status ok = l3_check_set(key, value.size(), usage_.capacity); !ok) return ok;
  const std::size_t need = l3::value_header_bytes + value.size();
  std::lock_guard lk(mu_);
  const std::string k = full_key(pool, key);
  if (auto it = map_.find(k); it != map_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);  // idempotent: refresh only
    return {};
  }
  while (usage_.bytes + need > usage_.capacity && !lru_.empty()) {
    drop(map_.find(lru_.back()));
    ++usage_.evicted;
  }
  entry e;
  l3::encode_value(value, e.stored);
  lru_.push_front(k);
  e.lru = lru_.begin();
  usage_.bytes += e.stored.size();
  usage_.values += 1;
  map_.emplace(k, std::move(e));
  return {};
}

status memory_store::get(l3_pool pool, std::string_view key, std::vector<std::byte>& out) {
  out.clear();
  std::lock_guard lk(mu_);
  auto it = map_.find(full_key(pool, key));
  if (it == map_.end()) return {errc::not_found, "L3 key not found"};
  auto payload = l3::decode_value(it->second.stored);
  if (!payload) {
    drop(it);
    ++usage_.corrupt;
    return {errc::not_found, "L3 value was corrupt and is deleted: " + payload.err().message};
  }
  out.assign(payload->begin(), payload->end());
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return {};
}

status memory_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  std::lock_guard lk(mu_);
  auto it = map_.find(full_key(pool, key));
  if (it == map_.end()) return {errc::not_found, "L3 key not found"};
  bool corrupt = false;
  status st = l3_decode_into(key, it->second.stored, dst, corrupt);
  if (corrupt) {
    drop(it);
    ++usage_.corrupt;
    return {errc::not_found, "L3 value was corrupt and is deleted: " + st.err().message};
  }
  if (!st) return st;  // the caller's buffer does not fit: the value stays
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return {};
}

bool memory_store::exists(l3_pool pool, std::string_view key) {
  std::lock_guard lk(mu_);
  return map_.count(full_key(pool, key)) != 0;
}

status memory_store::erase(l3_pool pool, std::string_view key) {
  std::lock_guard lk(mu_);
  auto it = map_.find(full_key(pool, key));
  if (it == map_.end()) return {errc::not_found, "L3 key not found"};
  drop(it);
  return {};
}

result<std::size_t> memory_store::erase_prefix(std::string_view prefix) {
  std::lock_guard lk(mu_);
  std::size_t n = 0;
  for (auto it = map_.begin(); it != map_.end();) {
    auto next = std::next(it);
    if (std::string_view(it->first).substr(1).starts_with(prefix)) {
      drop(it);
      ++n;
    }
    it = next;
  }
  return n;
}

l3_usage memory_store::usage() const {
  std::lock_guard lk(mu_);
  return usage_;
}

status memory_store::overwrite_stored(l3_pool pool, std::string_view key,
                                      std::vector<std::byte> bytes) {
  std::lock_guard lk(mu_);
  auto it = map_.find(full_key(pool, key));
  if (it == map_.end()) return {errc::not_found, "L3 key not found"};
  usage_.bytes -= it->second.stored.size();
  it->second.stored = std::move(bytes);
  usage_.bytes += it->second.stored.size();
  return {};
}

}  // namespace hc
