#pragma once
// The header every L3 value carries (architecture.md §4): magic, format version, payload
// length and an XXH3-64 checksum of the payload. A value that fails any check is a miss
// (the store deletes it), never served. XXH3 runs at memory speed; RocksDB's own block
// checksums are software CRC32C on Debian's build (~1.5 GB/s, floors.md §7), so the
// RocksDB store turns those off on the read path and relies on this one.
//
// Layout (little-endian, 24 bytes, then the payload):
//   u32 magic "HC3V" | u16 format version | u16 flags (0) | u64 payload length | u64 xxh3

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/status.hpp"

namespace hc::l3 {

inline constexpr std::uint32_t value_magic = 0x56334348;  // "HC3V"
inline constexpr std::uint16_t value_format = 1;
inline constexpr std::size_t value_header_bytes = 24;

/// Header + payload, appended to `out` (cleared first).
void encode_value(std::span<const std::byte> payload, std::vector<std::byte>& out);

/// The payload inside `stored`, or parse_error naming what failed (magic, version,
/// flags other than 0, length, checksum).
result<std::span<const std::byte>> decode_value(std::span<const std::byte> stored);

}  // namespace hc::l3
