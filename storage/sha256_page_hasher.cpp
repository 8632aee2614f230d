#include "storage/sha256_page_hasher.hpp"

#include <openssl/evp.h>

#include <bit>
#include <cstdint>
#include <memory>

namespace hc {
namespace {

/// SHA-256 fetched once: EVP_sha256() in EVP_Digest makes OpenSSL 3 look the
/// implementation up, under locks, on every call — 3/4 of a page-1 digest's time.
const EVP_MD* sha256() {
  static const EVP_MD* const md = [] {
    const EVP_MD* m = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return m != nullptr ? m : EVP_sha256();  // kept for the process's life
  }();
  return md;
}

struct ctx_free {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

/// One digest context per thread, reused (set up again by each EVP_DigestInit_ex2).
EVP_MD_CTX* thread_context() {
  thread_local const std::unique_ptr<EVP_MD_CTX, ctx_free> ctx(EVP_MD_CTX_new());
  return ctx.get();
}

/// The page's tokens as 4-byte little-endian words, fed to `ctx` in pieces.
bool update_tokens(EVP_MD_CTX* ctx, std::span<const token_id> page) {
  if constexpr (std::endian::native == std::endian::little) {
    return EVP_DigestUpdate(ctx, page.data(), page.size_bytes()) == 1;
  } else {
    unsigned char buf[256];
    std::size_t n = 0;
    for (token_id t : page) {
      const auto u = static_cast<std::uint32_t>(t);
      for (int b = 0; b < 4; ++b)
        buf[n++] = static_cast<unsigned char>((u >> (8 * b)) & 0xffu);
      if (n == sizeof buf) {
        if (EVP_DigestUpdate(ctx, buf, n) != 1) return false;
        n = 0;
      }
    }
    return n == 0 || EVP_DigestUpdate(ctx, buf, n) == 1;
  }
}

}  // namespace

page_digest sha256_page_hasher::hash_page(const page_digest* prior,
                                          std::span<const token_id> page) const {
  // SHA-256(prior digest || each token as 4-byte little-endian unsigned): explicit, so the
  // key is host independent.
  page_digest d;
  unsigned int len = 0;
  EVP_MD_CTX* ctx = thread_context();
  std::unique_ptr<EVP_MD_CTX, ctx_free> own;  // the thread's could not be made: one for the call
  if (ctx == nullptr) {
    own.reset(EVP_MD_CTX_new());
    ctx = own.get();
  }
  if (ctx == nullptr || EVP_DigestInit_ex2(ctx, sha256(), nullptr) != 1 ||
      (prior != nullptr && EVP_DigestUpdate(ctx, prior->bytes.data(), prior->bytes.size()) != 1) ||
      !update_tokens(ctx, page) || EVP_DigestFinal_ex(ctx, d.bytes.data(), &len) != 1)
    return page_digest{};  // OpenSSL out of memory: zeros, as EVP_Digest's failure left them
  return d;
}

}  // namespace hc
