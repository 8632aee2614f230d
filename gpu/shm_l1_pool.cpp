#include "gpu/shm_l1_pool.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <utility>

namespace hc {
namespace {

l1_pool_names names_of(const shm_region& kv, const shm_region& ssm) {
  l1_pool_names n;
  n.kv = kv.name();
  n.kv_bytes = kv.bytes().size();
  n.ssm = ssm.name();
  n.ssm_bytes = ssm.bytes().size();
  return n;
}

}  // namespace

shm_l1_pool::shm_l1_pool(shm_region kv_region, std::size_t token_bytes, shm_region ssm_region,
                         std::size_t slot_bytes)
    : detail::shm_l1_regions{std::move(kv_region), std::move(ssm_region)},
      byte_l1_pool(shm_l1_regions::kv.bytes(), token_bytes, shm_l1_regions::ssm.bytes(), slot_bytes,
                   names_of(shm_l1_regions::kv, shm_l1_regions::ssm)) {}

result<std::unique_ptr<shm_l1_pool>> shm_l1_pool::create(
    const std::string& kv_name, std::size_t tokens, std::size_t token_bytes,
    const std::string& ssm_name, std::size_t slots, std::size_t slot_bytes, shm_access access) {
  shm_region kv, ssm;
  if (token_bytes > 0) {
    auto r = shm_region::create(kv_name, tokens * token_bytes, access);
    if (!r) return r.err();
    kv = std::move(*r);
  }
  if (slot_bytes > 0) {
    auto r = shm_region::create(ssm_name, slots * slot_bytes, access);
    if (!r) return r.err();
    ssm = std::move(*r);
  }
  return std::unique_ptr<shm_l1_pool>(
      new shm_l1_pool(std::move(kv), token_bytes, std::move(ssm), slot_bytes));
}

bool shm_l1_pool::names_exist(const l1_pool_names& names) noexcept {
  for (const std::string* n : {&names.kv, &names.ssm}) {
    struct stat st {};
    if (!n->empty() && ::stat(("/dev/shm" + *n).c_str(), &st) != 0) return false;
  }
  return true;
}

void shm_l1_pool::unlink(const l1_pool_names& names) noexcept {
  for (const std::string* n : {&names.kv, &names.ssm})
    if (!n->empty()) ::shm_unlink(n->c_str());
}

}  // namespace hc
