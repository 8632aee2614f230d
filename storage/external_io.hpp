#pragma once
// The L3 operations of external clients (SGLang's HiCache storage backend through the
// Store capability, integration.md §1.3-§1.5), over an l3_store and a byte arena the
// client shares with the node. A value is the concatenation of its segments in the arena
// (a Mamba state of 1 + conv buffers is one value). Keys are namespaced by the client's
// identity under "ext/", so they never meet the node's own keys (which start with the
// instance fingerprint) or another client's.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "actors/common/status.hpp"
#include "storage/hit_policy.hpp"
#include "storage/l3_store.hpp"

namespace hc::l3 {

struct segment {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

/// "ext/<identity>/<key>". invalid_argument for an empty identity or key, or one with a
/// control character.
result<std::string> external_key(std::string_view identity, std::string_view key);

/// "ext/<identity>/": the prefix of every key of that identity (for a clear).
result<std::string> external_prefix(std::string_view identity);

/// invalid_argument (naming the segment) unless every segment lies inside the arena and the
/// total is at most `max_value_bytes`.
status check_segments(std::span<const segment> segs, std::size_t arena_bytes,
                      std::size_t max_value_bytes);

/// Reads the value into its segments. False if missing, corrupt, or of another length.
bool get_into(l3_store& store, l3_pool pool, std::string_view key, std::span<const segment> segs,
              std::span<std::byte> arena, std::vector<std::byte>& scratch);

/// Writes the concatenated segments as the value (idempotent).
status set_from(l3_store& store, l3_pool pool, std::string_view key, std::span<const segment> segs,
                std::span<const std::byte> arena, std::vector<std::byte>& scratch);

struct sidecar_query {
  l3_pool pool = l3_pool::ssm_state;
  hit_policy policy = hit_policy::trailing_pages;
  std::size_t trailing_n = 1;
  std::string key_suffix;  ///< the pool's key of page i is kv_keys[i] + this
};

/// The longest sidecar key suffix a query may carry.
inline constexpr std::size_t max_key_suffix = 256;

/// invalid_argument unless `suffix` is printable text of at most max_key_suffix bytes (""
/// is fine): what keeps a suffixed key as valid as the key it extends.
status check_key_suffix(std::string_view suffix);

struct exists_answer {
  std::size_t kv_hit_pages = 0;
  std::vector<std::size_t> restorable;  ///< ascending prefix lengths in pages
};

/// batch_exists_v2 over already-namespaced keys: the leading run of present KV pages, and
/// the restorable lengths once every sidecar pool's policy is applied.
exists_answer exists_v2(l3_store& store, std::span<const std::string> kv_keys,
                        std::span<const sidecar_query> sidecars);

}  // namespace hc::l3
