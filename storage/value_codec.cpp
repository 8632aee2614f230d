#include "storage/value_codec.hpp"

#include <xxhash.h>

#include <cstring>
#include <string>

namespace hc::l3 {
namespace {

template <class T>
void put_le(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i)
    p[i] = static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xFF);
}

template <class T>
T get_le(const std::byte* p) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i)
    v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return static_cast<T>(v);
}

}  // namespace

void encode_value(std::span<const std::byte> payload, std::vector<std::byte>& out) {
  out.resize(value_header_bytes + payload.size());
  std::byte* h = out.data();
  put_le<std::uint32_t>(h, value_magic);
  put_le<std::uint16_t>(h + 4, value_format);
  put_le<std::uint16_t>(h + 6, 0);
  put_le<std::uint64_t>(h + 8, payload.size());
  put_le<std::uint64_t>(h + 16, XXH3_64bits(payload.data(), payload.size()));
  if (!payload.empty()) std::memcpy(h + value_header_bytes, payload.data(), payload.size());
}

result<std::span<const std::byte>> decode_value(std::span<const std::byte> stored) {
  if (stored.size() < value_header_bytes)
    return error{errc::parse_error, "L3 value of " + std::to_string(stored.size()) +
                                        " bytes is shorter than its header"};
  const std::byte* h = stored.data();
  if (get_le<std::uint32_t>(h) != value_magic)
    return error{errc::parse_error, "L3 value has a bad magic"};
  if (const auto v = get_le<std::uint16_t>(h + 4); v != value_format)
    return error{errc::parse_error, "L3 value has format version " + std::to_string(v) +
                                        ", this node reads " + std::to_string(value_format)};
  if (const auto f = get_le<std::uint16_t>(h + 6); f != 0)
    return error{errc::parse_error, "L3 value has unknown flags " + std::to_string(f)};
  const auto len = get_le<std::uint64_t>(h + 8);
  if (len != stored.size() - value_header_bytes)
    return error{errc::parse_error, "L3 value says " + std::to_string(len) + " bytes but holds " +
                                        std::to_string(stored.size() - value_header_bytes)};
  auto payload = stored.subspan(value_header_bytes);
  if (XXH3_64bits(payload.data(), payload.size()) != get_le<std::uint64_t>(h + 16))
    return error{errc::parse_error, "L3 value fails its checksum"};
  return payload;
}

}  // namespace hc::l3
