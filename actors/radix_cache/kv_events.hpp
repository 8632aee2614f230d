#pragma once
// KV cache events (upstream PR 23678). Their block hashes come from the chained page
// digests of actors/common/page_digest.hpp.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "actors/common/ids.hpp"
#include "actors/common/page_digest.hpp"

namespace hc {

/// One KV event, in emission order.
struct kv_event {
  enum class kind { block_stored, block_removed, all_blocks_cleared };
  /// full: a page of KV. mamba: an SSM state checkpoint (tree_config::state_events), keyed
  /// by the block hash of the last page of the node that holds it: a router that knows
  /// which of a prefix's pages carry a checkpoint knows how far back a request can resume.
  enum class cache_group { full, mamba };
  kind type = kind::block_stored;
  cache_group group = cache_group::full;
  namespace_id ns = 0;          ///< the node's namespace (all_blocks_cleared: every namespace)
  std::int64_t block_hash = 0;  // stored / removed
  std::optional<std::int64_t> parent_block_hash;  // stored: hash of the previous page
  std::vector<token_id> token_ids;                // stored: the page's tokens
  std::uint32_t block_size = 0;                   // stored: tokens in the page
};

/// Where a node publishes its instances' events (events/zmq_kv_event_publisher: ZMQ PUB,
/// README "Route on it"). Thread-safe: every instance's actor publishes from its own thread.
class kv_event_sink {
 public:
  virtual ~kv_event_sink() = default;
  /// One batch of the events of one topic (an instance and namespace), in emission order.
  virtual void publish(const std::string& topic, std::span<const kv_event> events) = 0;
  /// Sequence number of the last batch published; 0 before the first.
  virtual std::uint64_t last_sequence() const = 0;
};

}  // namespace hc
