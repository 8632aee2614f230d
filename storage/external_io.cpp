#include "storage/external_io.hpp"

#include <cstring>

#include "actors/common/printable_text.hpp"

namespace hc::l3 {

result<std::string> external_key(std::string_view identity, std::string_view key) {
  if (identity.empty() || !is_printable_text(identity))
    return error{errc::invalid_argument, "store identity must be non-empty printable text"};
  if (key.empty() || !is_printable_text(key))
    return error{errc::invalid_argument, "store keys must be non-empty printable text"};
  std::string k;
  k.reserve(5 + identity.size() + key.size());
  k.append("ext/").append(identity).append("/").append(key);
  return k;
}

status check_key_suffix(std::string_view suffix) {
  if (suffix.size() > max_key_suffix)
    return {errc::invalid_argument, "a sidecar key suffix of " + std::to_string(suffix.size()) +
                                        " bytes exceeds the limit of " +
                                        std::to_string(max_key_suffix)};
  if (!is_printable_text(suffix))
    return {errc::invalid_argument, "a sidecar key suffix must be printable text"};
  return {};
}

result<std::string> external_prefix(std::string_view identity) {
  auto k = external_key(identity, "x");
  if (!k) return k.err();
  k->pop_back();
  return std::move(*k);
}

status check_segments(std::span<const segment> segs, std::size_t arena_bytes,
                      std::size_t max_value_bytes) {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const segment& s = segs[i];
    if (s.offset > arena_bytes || s.length > arena_bytes - s.offset)
      return {errc::invalid_argument, "segment " + std::to_string(i) + " [" +
                                          std::to_string(s.offset) + ", +" +
                                          std::to_string(s.length) + ") is outside the " +
                                          std::to_string(arena_bytes) + "-byte arena"};
    total += s.length;
  }
  if (segs.empty() || total == 0)
    return {errc::invalid_argument, "a value needs at least one non-empty segment"};
  if (total > max_value_bytes)
    return {errc::invalid_argument, "a value of " + std::to_string(total) +
                                        " bytes exceeds the limit of " +
                                        std::to_string(max_value_bytes)};
  return {};
}

bool get_into(l3_store& store, l3_pool pool, std::string_view key, std::span<const segment> segs,
              std::span<std::byte> arena, std::vector<std::byte>& scratch) {
  if (segs.size() == 1)  // one contiguous value: straight into the arena, no staging copy
    return store.get_into(pool, key, arena.subspan(segs[0].offset, segs[0].length)).ok();
  if (!store.get(pool, key, scratch).ok()) return false;
  std::uint64_t total = 0;
  for (const segment& s : segs)
    total += s.length;
  if (scratch.size() != total) return false;
  std::size_t at = 0;
  for (const segment& s : segs) {
    std::memcpy(arena.data() + s.offset, scratch.data() + at, s.length);
    at += s.length;
  }
  return true;
}

status set_from(l3_store& store, l3_pool pool, std::string_view key, std::span<const segment> segs,
                std::span<const std::byte> arena, std::vector<std::byte>& scratch) {
  if (segs.size() == 1)  // one contiguous value: no staging copy
    return store.set(pool, key, arena.subspan(segs[0].offset, segs[0].length));
  scratch.clear();
  for (const segment& s : segs)
    scratch.insert(scratch.end(), arena.begin() + static_cast<std::ptrdiff_t>(s.offset),
                   arena.begin() + static_cast<std::ptrdiff_t>(s.offset + s.length));
  return store.set(pool, key, scratch);
}

exists_answer exists_v2(l3_store& store, std::span<const std::string> kv_keys,
                        std::span<const sidecar_query> sidecars) {
  std::vector<bool> kv;
  for (const std::string& k : kv_keys) {
    if (!store.exists(l3_pool::kv_page, k)) break;  // only the leading run matters
    kv.push_back(true);
  }
  exists_answer a;
  a.kv_hit_pages = kv.size();
  std::vector<pool_presence> pools;
  for (const sidecar_query& q : sidecars) {
    pool_presence p;
    p.policy = q.policy;
    p.trailing_n = q.trailing_n == 0 ? 1 : q.trailing_n;
    for (std::size_t i = 0; i < kv.size(); ++i)
      p.present.push_back(
          store.exists(q.pool, q.key_suffix.empty() ? kv_keys[i] : kv_keys[i] + q.key_suffix));
    pools.push_back(std::move(p));
  }
  a.restorable = restorable_prefix_pages(kv, pools);
  return a;
}

}  // namespace hc::l3
