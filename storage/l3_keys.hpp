#pragma once
// L3 keys of the node's own data (architecture.md §4, spec §5.4): an instance fingerprint
// (model, tensor-parallel coordinate, layout version), the namespace, and the chained
// SHA-256 page hash in hex. A KV page lives under its page hash in the kv_page pool; the
// SSM state of a node lives under the node's last page hash in the ssm_state pool. Two
// instances that differ in model, rank or layout never read each other's values; the
// namespace keeps LoRA / salted sessions apart (SGLang leaves extra_key out of the hash —
// cache-semantics.md §5.4 — hybridcache does not).

#include <cstdint>
#include <string>
#include <string_view>

#include "actors/common/page_digest.hpp"

namespace hc::l3 {

/// Bumped whenever the byte layout of pages or states changes.
inline constexpr std::uint32_t layout_version = 1;

struct instance_identity {
  std::string model;
  std::uint32_t tp_rank = 0;
  std::uint32_t tp_size = 1;
  std::uint64_t page_bytes = 0;   ///< bytes of one KV page (all full-attention layers)
  std::uint64_t state_bytes = 0;  ///< bytes of one SSM state (all SSM layers)
};

/// 16 hex digits identifying the instance's layout (SHA-256 of its identity).
std::string fingerprint(const instance_identity& id);

/// "<fingerprint>/<namespace>/<64 hex digits of the page hash>".
std::string page_key(std::string_view fingerprint, std::string_view ns, const page_digest& d);

}  // namespace hc::l3
