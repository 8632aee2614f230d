#pragma once
// The header every L3 value carries (architecture.md §4): magic, format version, payload
// length and an XXH3-64 checksum of the payload. A value that fails any check is a miss
// (the store deletes it), never served. XXH3 runs at memory speed; RocksDB's own block
// checksums are software CRC32C on Debian's build (~1.5 GB/s, floors.md §7), so the
// RocksDB store turns those off on the read path and relies on this one.
//
// Layout (little-endian, 24 bytes, then the payload):
//   u32 magic "HC3V" | u16 format version | u16 flags (0) | u64 payload length | u64 xxh3

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "actors/common/status.hpp"

namespace hc::l3 {

inline constexpr std::uint32_t value_magic = 0x56334348;  // "HC3V"
inline constexpr std::uint16_t value_format = 1;
inline constexpr std::size_t value_header_bytes = 24;

/// The header of `payload` alone (for writers that send header and payload as two parts
/// and so never copy the payload).
std::array<std::byte, value_header_bytes> encode_header(std::span<const std::byte> payload);

/// Header + payload, appended to `out` (cleared first).
void encode_value(std::span<const std::byte> payload, std::vector<std::byte>& out);

/// The payload length a stored value's header announces after checking magic, version and
/// flags and that the stored size agrees (parse_error naming what failed). The checksum is
/// not checked: that takes a pass over the payload (decode_value / decode_into).
result<std::uint64_t> payload_length(std::span<const std::byte> stored);

/// The checksum a header records for `payload` (XXH3-64): what the L3 store keeps in its
/// index beside a payload it stores without the header.
std::uint64_t payload_checksum(std::span<const std::byte> payload) noexcept;

/// Copies the payload of `stored` into `dst` and checks its checksum on the way (one pass
/// over the bytes: each block is hashed right after it was copied, while it is in cache).
/// REQUIRES: payload_length(stored) succeeded and equals dst.size(). parse_error if the
/// checksum fails — `dst` then holds the corrupt bytes and must not be used.
status decode_into(std::span<const std::byte> stored, std::span<std::byte> dst);

/// The payload inside `stored`, or parse_error naming what failed (magic, version,
/// flags other than 0, length, checksum).
result<std::span<const std::byte>> decode_value(std::span<const std::byte> stored);

}  // namespace hc::l3
