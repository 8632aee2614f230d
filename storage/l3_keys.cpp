#include "storage/l3_keys.hpp"

#include <openssl/sha.h>

#include <fmt/format.h>

namespace hc::l3 {

std::string fingerprint(const instance_identity& id) {
  const std::string text = fmt::format("{}\n{}\n{}\n{}\n{}\n{}", id.model, id.tp_rank, id.tp_size,
                                       id.page_bytes, id.state_bytes, layout_version);
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), md);
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += fmt::format("{:02x}", md[i]);
  return out;
}

std::string page_key(std::string_view fp, std::string_view ns, const page_digest& d) {
  std::string out;
  out.reserve(fp.size() + ns.size() + 66);
  out.append(fp).append("/").append(ns).append("/");
  for (std::uint8_t b : d.bytes)
    out += fmt::format("{:02x}", b);
  return out;
}

}  // namespace hc::l3
