#pragma once
// How far one session's forwards got — the one notion of batch progress shared by the
// request tables (quarantine, write locks), the write fences of the tree and the L1
// stream's fence queue.
//
// A session's batches strictly increase. A batch is claimed when its ops are handed out
// or its forward begins, and ended when its forward ended (every earlier batch with it).
// Thread safety: none (a value type).

#include <algorithm>
#include <cstdint>
#include <optional>

namespace hc {

struct batch_progress {
  std::uint64_t claimed = 0;  ///< the highest batch claimed (0: none)
  std::uint64_t ended = 0;    ///< the highest batch ended (0: none)

  void claim(std::uint64_t batch) noexcept { claimed = std::max(claimed, batch); }
  void end(std::uint64_t batch) noexcept { ended = std::max(ended, batch); }
  /// True while `batch` has not ended (it, or a later batch, may still write).
  bool writing(std::uint64_t batch) const noexcept { return ended < batch; }
  /// The latest claimed batch if it has not ended.
  std::optional<std::uint64_t> in_flight() const noexcept {
    return claimed > ended ? std::optional<std::uint64_t>(claimed) : std::nullopt;
  }
};

}  // namespace hc
