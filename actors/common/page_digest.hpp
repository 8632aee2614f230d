#pragma once
// Chained page digests: the key of a KV page in the L3 store and in KV events.
//
// Page key = SHA-256 over [prior page digest] || each token as 4-byte little-endian
// unsigned id; the prior of a root child's first page is empty, and the chain continues
// across nodes (cache-semantics.md §5.4). The hash function is injected (page_hasher) so
// the tree stays pure; storage/sha256_page_hasher provides the OpenSSL implementation.
// Vocabulary header: standard library only.

#include <array>
#include <cstdint>
#include <span>

#include "actors/common/ids.hpp"

namespace hc {

/// The SHA-256 digest of one page (32 bytes).
struct page_digest {
  std::array<std::uint8_t, 32> bytes{};
  friend bool operator==(const page_digest&, const page_digest&) = default;
};

/// KV events use the first 16 hex digits of the digest as a signed 64-bit block hash.
std::int64_t block_hash_of(const page_digest& d) noexcept;

/// Computes chained page digests. Implementations must be deterministic and stateless.
class page_hasher {
 public:
  virtual ~page_hasher() = default;
  /// Digest of `page` chained after `prior` (nullptr for the first page below root).
  virtual page_digest hash_page(const page_digest* prior, std::span<const token_id> page) const = 0;
};

}  // namespace hc
