#pragma once
// The vocabulary of the Store capability (an external client's L3 batches; SGLang's HiCache
// storage backend, integration.md §1.3-§1.5). Values live in a node-owned arena the
// client maps, addressed as segment lists. Vocabulary header: standard library only.

#include <cstdint>
#include <string>

namespace hc {

/// Which of the store's pools a key belongs to.
enum class store_pool : std::uint8_t { kv_page = 0, ssm_state = 1 };

/// A byte range of the arena; a value is the concatenation of its segments.
struct store_segment {
  std::uint64_t offset = 0, length = 0;
};

/// A sidecar pool of batch_exists_v2 and the hit policy that decides which pages must have
/// it for a prefix to be restorable.
struct store_sidecar {
  store_pool which = store_pool::ssm_state;
  bool trailing = true;  ///< TRAILING_PAGES(n) if true, else ALL_PAGES
  std::uint32_t n = 1;
  /// The pool's key of page i is KV key i + this ("": the same key). An MLA model's TP
  /// ranks share KV pages but each holds its own shard of the SSM state.
  std::string key_suffix;
};

}  // namespace hc
