#pragma once
// SHA-256 chained page hashes (cache-semantics.md §5.4) with OpenSSL libcrypto:
// digest = SHA-256(prior digest bytes || each token as 4-byte little-endian unsigned).
// Stateless and thread-safe.

#include "actors/common/page_digest.hpp"

namespace hc {

class sha256_page_hasher final : public page_hasher {
 public:
  page_digest hash_page(const page_digest* prior, std::span<const token_id> page) const override;
};

}  // namespace hc
