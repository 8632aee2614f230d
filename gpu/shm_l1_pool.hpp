#pragma once
// CPU mode's L1 pools: the bytes of a byte_l1_pool in two POSIX shared-memory regions,
// named so that a worker maps them (pool_info). Unlinked when the pool is destroyed.
// Thread safety: none; one owner (the instance's forward_stream).

#include <memory>
#include <string>

#include "actors/common/l1_pool.hpp"
#include "actors/common/status.hpp"
#include "gpu/shm_region.hpp"

namespace hc {

namespace detail {
struct shm_l1_regions {  // constructed before the byte_l1_pool that points into them
  shm_region kv, ssm;
};
}  // namespace detail

class shm_l1_pool final : private detail::shm_l1_regions, public byte_l1_pool {
 public:
  /// `tokens` KV rows of `token_bytes` under `kv_name` and `slots` slot rows of `slot_bytes`
  /// under `ssm_name`; a part with 0 bytes per row gets no region. `access`: who may map them.
  static result<std::unique_ptr<shm_l1_pool>> create(const std::string& kv_name, std::size_t tokens,
                                                     std::size_t token_bytes,
                                                     const std::string& ssm_name, std::size_t slots,
                                                     std::size_t slot_bytes,
                                                     shm_access access = shm_access::user);
  /// Removes the names of a pool's regions now (empty names are skipped, a name already
  /// gone is not an error); mappings, the pool's own included, stay valid until unmapped.
  /// The pool's destructor then finds them gone.
  static void unlink(const l1_pool_names& names) noexcept;
  /// Whether every (non-empty) name of a pool's regions still exists: someone may remove
  /// them from under the node (rm /dev/shm/..., a cleanup script), and then a new worker
  /// cannot map the pools while the mapped ones go on. Linux (/dev/shm).
  static bool names_exist(const l1_pool_names& names) noexcept;

 private:
  shm_l1_pool(shm_region kv_region, std::size_t token_bytes, shm_region ssm_region,
              std::size_t slot_bytes);
};

}  // namespace hc
