#pragma once
// KV cache events (upstream PR 23678) and the page-hash contract they rely on.
//
// Page key = SHA-256 over [prior page digest] || each token as 4-byte little-endian
// unsigned id; the prior of a root child's first page is empty, and the chain continues
// across nodes (cache-semantics.md §5.4). The hash function is injected (page_hasher) so
// the tree stays pure; storage/sha256_page_hasher provides the OpenSSL implementation.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

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

/// One KV event, in emission order.
struct kv_event {
  enum class kind { block_stored, block_removed, all_blocks_cleared };
  kind type = kind::block_stored;
  std::int64_t block_hash = 0;                    // stored / removed
  std::optional<std::int64_t> parent_block_hash;  // stored: hash of the previous page
  std::vector<token_id> token_ids;                // stored: the page's tokens
  std::uint32_t block_size = 0;                   // stored: tokens in the page
};

}  // namespace hc
