#include "storage/l3_store.hpp"

#include <cstring>
#include <string>

#include "storage/value_codec.hpp"

namespace hc {

status l3_check_set(std::string_view key, std::size_t value_bytes, std::uint64_t capacity) {
  if (key.empty()) return {errc::invalid_argument, "L3 key is empty"};
  const std::uint64_t need = l3::value_header_bytes + value_bytes;
  if (need > capacity)
    return {errc::out_of_memory, "L3 value of " + std::to_string(need) +
                                     " bytes exceeds the store capacity " +
                                     std::to_string(capacity)};
  return {};
}

error l3_size_mismatch(std::string_view key, std::size_t have, std::size_t want) {
  return {errc::parse_error, "L3 value of " + std::string(key) + " has " + std::to_string(have) +
                                 " bytes, expected " + std::to_string(want)};
}

status l3_decode_into(std::string_view key, std::span<const std::byte> stored,
                      std::span<std::byte> dst, bool& corrupt) {
  corrupt = false;
  auto len = l3::payload_length(stored);
  if (!len) {
    corrupt = true;
    return len.err();
  }
  if (*len != dst.size()) return l3_size_mismatch(key, *len, dst.size());
  status st = l3::decode_into(stored, dst);
  corrupt = !st;
  return st;
}

status l3_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  thread_local std::vector<std::byte> buf;
  if (status s = get(pool, key, buf); !s) return s;
  if (buf.size() != dst.size()) return l3_size_mismatch(key, buf.size(), dst.size());
  if (!buf.empty()) std::memcpy(dst.data(), buf.data(), buf.size());
  return {};
}

}  // namespace hc
