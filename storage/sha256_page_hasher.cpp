#include "storage/sha256_page_hasher.hpp"

#include <openssl/evp.h>

#include <cstdint>
#include <vector>

namespace hc {

page_digest sha256_page_hasher::hash_page(const page_digest* prior,
                                          std::span<const token_id> page) const {
  // Little-endian encoding of every token (explicit, so the key is host independent).
  std::vector<unsigned char> buf;
  buf.reserve((prior ? 32 : 0) + page.size() * 4);
  if (prior) buf.insert(buf.end(), prior->bytes.begin(), prior->bytes.end());
  for (token_id t : page) {
    const auto u = static_cast<std::uint32_t>(t);
    buf.push_back(static_cast<unsigned char>(u & 0xffu));
    buf.push_back(static_cast<unsigned char>((u >> 8) & 0xffu));
    buf.push_back(static_cast<unsigned char>((u >> 16) & 0xffu));
    buf.push_back(static_cast<unsigned char>((u >> 24) & 0xffu));
  }
  page_digest d;
  unsigned int len = 0;
  EVP_Digest(buf.data(), buf.size(), d.bytes.data(), &len, EVP_sha256(), nullptr);
  return d;
}

}  // namespace hc
