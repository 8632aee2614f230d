#include "storage/value_codec.hpp"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cassert>
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

std::array<std::byte, value_header_bytes> encode_header(std::span<const std::byte> payload) {
  std::array<std::byte, value_header_bytes> a{};
  std::byte* h = a.data();
  put_le<std::uint32_t>(h, value_magic);
  put_le<std::uint16_t>(h + 4, value_format);
  put_le<std::uint16_t>(h + 6, 0);
  put_le<std::uint64_t>(h + 8, payload.size());
  put_le<std::uint64_t>(h + 16, XXH3_64bits(payload.data(), payload.size()));
  return a;
}

void encode_value(std::span<const std::byte> payload, std::vector<std::byte>& out) {
  out.resize(value_header_bytes + payload.size());
  const auto h = encode_header(payload);
  std::memcpy(out.data(), h.data(), h.size());
  if (!payload.empty())
    std::memcpy(out.data() + value_header_bytes, payload.data(), payload.size());
}

std::uint64_t payload_checksum(std::span<const std::byte> payload) noexcept {
  return XXH3_64bits(payload.data(), payload.size());
}

result<std::uint64_t> payload_length(std::span<const std::byte> stored) {
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
  return len;
}

result<std::span<const std::byte>> decode_value(std::span<const std::byte> stored) {
  if (auto len = payload_length(stored); !len) return len.err();
  auto payload = stored.subspan(value_header_bytes);
  if (XXH3_64bits(payload.data(), payload.size()) != get_le<std::uint64_t>(stored.data() + 16))
    return error{errc::parse_error, "L3 value fails its checksum"};
  return payload;
}

status decode_into(std::span<const std::byte> stored, std::span<std::byte> dst) {
  assert(stored.size() == value_header_bytes + dst.size());
  const std::span<const std::byte> payload = stored.subspan(value_header_bytes);
  // 32 KiB blocks: copied, then hashed from L1/L2 instead of a second pass from memory.
  constexpr std::size_t block = 32 << 10;
  XXH3_state_t state;
  XXH3_state_t* st = &state;
  XXH3_INITSTATE(st);
  XXH3_64bits_reset(st);
  for (std::size_t off = 0; off < dst.size(); off += block) {
    const std::size_t n = std::min(block, dst.size() - off);
    std::memcpy(dst.data() + off, payload.data() + off, n);
    XXH3_64bits_update(st, dst.data() + off, n);
  }
  const XXH64_hash_t got = XXH3_64bits_digest(st);
  if (got != get_le<std::uint64_t>(stored.data() + 16))
    return {errc::parse_error, "L3 value fails its checksum"};
  return {};
}

}  // namespace hc::l3
