#include "storage/l3_store.hpp"

#include <cstring>
#include <string>

namespace hc {

error l3_size_mismatch(std::string_view key, std::size_t have, std::size_t want) {
  return {errc::parse_error, "L3 value of " + std::string(key) + " has " + std::to_string(have) +
                                 " bytes, expected " + std::to_string(want)};
}

status l3_store::get_into(l3_pool pool, std::string_view key, std::span<std::byte> dst) {
  thread_local std::vector<std::byte> buf;
  if (status s = get(pool, key, buf); !s) return s;
  if (buf.size() != dst.size()) return l3_size_mismatch(key, buf.size(), dst.size());
  if (!buf.empty()) std::memcpy(dst.data(), buf.data(), buf.size());
  return {};
}

}  // namespace hc
