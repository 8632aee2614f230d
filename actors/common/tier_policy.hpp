#pragma once
// The HiCache policies a worker chooses per instance (cache-semantics.md §5.2, §5.4).
// Vocabulary header: standard library only.

#include <cstdint>

namespace hc {

/// HiCache write policies (cache-semantics.md §5.2).
enum class write_policy : std::uint8_t {
  write_through,            ///< back up a node on its first insert hit
  write_through_selective,  ///< back up on the second hit
  write_back,               ///< back up only when a device leaf is evicted (then demote)
};

/// When the scheduler admits a request whose prefetch is still running (§5.4).
enum class prefetch_termination : std::uint8_t { best_effort, wait_complete, timeout };

}  // namespace hc
